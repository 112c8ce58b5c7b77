#include "hosting/segment_host.h"

#include <spdlog/spdlog.h>

#include "common/checksum.h"
#include "common/units.h"

namespace kvpool::hosting {

SegmentHost::SegmentHost(const SegmentHostOptions& options)
    : service_(&table_, options.security.auth_secret), size_(options.size) {}

SegmentHost::~SegmentHost() {
  if (server_ != nullptr) server_->Stop();
  if (disk_ != nullptr) disk_->Stop();
}

Result<std::unique_ptr<SegmentHost>> SegmentHost::Start(const SegmentHostOptions& options) {
  auto memory = transfer::SegmentMemory::Map(options.size, options.memory);
  if (!memory.ok()) return memory.status();
  std::unique_ptr<SegmentHost> host(new SegmentHost(options));
  if (options.disk) {
    // Before the port is taken: a bad disk path fails the start with its own message.
    auto disk = DiskHost::Open(*options.disk);
    if (!disk.ok()) return disk.status();
    host->disk_ = std::move(disk).value();
    host->service_.set_tier_reader(host->disk_.get());
  }
  host->service_.set_write_recorder(host.get());
  rpc::ServerOptions so;
  so.name = "kvpool data";
  so.host = options.bind_host;
  so.port = options.port;
  so.port_range = options.port_range;
  so.threads = options.io_threads;
  // Each connection served by one thread: a shared event loop handed most requests to the
  // other thread, a wake-up each (~25 us of a 4 KiB read's 80 on a VM, docs/benchmarks.md).
  so.pin_connections = true;
  so.zero_copy_min_bytes = options.zero_copy_min_bytes;
  so.zero_copy_counters = host->service_.zero_copy_counters();
  so.read_ahead = false;  // WRITEs carry page bytes: each lands in the segment in one copy
  so.security = options.security;
  so.protected_mode = options.protected_mode;
  so.insecure_hint = options.insecure_hint;
  host->server_ = std::make_unique<rpc::Server>(so, &host->service_);
  KVPOOL_RETURN_IF_ERROR(host->server_->Start());
  host->name_ = options.advertise_host + ":" + std::to_string(host->server_->port());
  std::shared_ptr<transfer::SegmentMemory> mem(std::move(memory).value());
  const void* base = mem->base();
  host->incarnation_ = mem->incarnation();
  KVPOOL_RETURN_IF_ERROR(host->table_.Add(host->name_, std::move(mem)));
  if (host->disk_ != nullptr) host->disk_->Bind(host->name_, &host->table_);
  // The base address lets an operator (or a fault-injection test) find a replica's bytes in
  // this process's memory (base + the replica's offset).
  spdlog::info("serving segment={} size={} on {}:{} base={} incarnation={:016x}", host->name_,
               FormatSize(options.size), options.bind_host, host->server_->port(), base,
               host->incarnation_);
  return host;
}

Status SegmentHost::Mount(master::MasterClient& master, Deadline deadline) {
  mounted_.store(false, std::memory_order_release);
  // Before the list is read: a write listed after it would be known to no master.
  objects_.CloseWrites();
  // Before the master can see the segment's free ranges again: no promotion fill lands after.
  if (disk_ != nullptr) disk_->FenceFills();
  // Which master is it? A ping tells (mount replies tell too, but only after mounting).
  auto ping = master.Ping(deadline);
  if (!ping.ok()) return ping.status();
  const bool restarted = mounted_epoch_ != 0 && ping->master_epoch() != mounted_epoch_;
  std::vector<rpc::StoredObject> list;
  if (restarted) {
    // A write listed before the FREE of its key's older version arrived: the newer one only.
    if (size_t older = objects_.DropSuperseded(); older > 0) {
      spdlog::info("segment={}: {} older versions of listed keys not re-registered", name_, older);
    }
    list = objects_.Snapshot();
    objects_.RestartSequence();
    size_t dropped = DropMismatched(list);
    if (dropped > 0) {
      spdlog::warn(
          "segment={}: {} listed objects no longer match their checksum (their range was "
          "written again just before the master went away); not re-registered",
          name_, dropped);
    }
  } else {
    objects_.Reset();  // a master that dropped our objects: they are not to come back
  }
  // Chunks well under the frame's 64 MiB meta limit (a key is at most 4 KiB).
  constexpr size_t kChunkBytes = 16 << 20;
  size_t begin = 0, restored = 0;
  Result<rpc::MountSegmentReply> r = Status::Ok();
  do {
    size_t end = begin, bytes = 0;
    while (end < list.size() && bytes < kChunkBytes) bytes += list[end++].key().size() + 48;
    rpc::MountSegment req;
    req.set_segment_name(name_);
    req.set_endpoint(name_);
    req.set_size(size_);
    req.set_incarnation(incarnation_);
    req.mutable_objects()->Reserve(static_cast<int>(end - begin));
    for (size_t i = begin; i < end; ++i) *req.add_objects() = list[i];
    req.set_more_objects(end < list.size());
    req.set_records_writes(true);  // RecordWrites
    r = master.MountSegmentAs(std::move(req), deadline);
    if (!r.ok()) return r.status();
    restored += r->objects_restored();
    begin = end;
  } while (begin < list.size());
  mounted_epoch_ = r->master_epoch();
  if (disk_ != nullptr) KVPOOL_RETURN_IF_ERROR(disk_->Mount(master, deadline));
  objects_.OpenWrites(mounted_epoch_);
  mounted_.store(true, std::memory_order_release);
  if (restarted) {
    spdlog::info("re-registered segment={} at a restarted master: objects_listed={} restored={}",
                 name_, list.size(), restored);
  } else {
    spdlog::info("mounted segment={} size={} at the master", name_, FormatSize(size_));
  }
  return Status::Ok();
}

size_t SegmentHost::DropMismatched(std::vector<rpc::StoredObject>& list) {
  auto memory = table_.Find(name_);
  if (memory == nullptr) return 0;
  size_t before = list.size();
  std::erase_if(list, [&](const rpc::StoredObject& o) {
    bool bad =
        o.offset() > memory->size() || o.size() > memory->size() - o.offset() ||
        (o.checksum() != 0 && ChecksumOf(memory->base() + o.offset(), o.size()) != o.checksum());
    if (bad) objects_.Erase(o.offset());
    return bad;
  });
  return before - list.size();
}

bool SegmentHost::RecordWrites(const rpc::DataRequest& req, std::span<const uint64_t> checksums) {
  if (req.segment_name() != name_) return false;
  bool all = true;
  for (int i = 0; i < req.ranges_size(); ++i) {
    const rpc::Range& r = req.ranges(i);
    if (req.record_keys(i).empty() || checksums[i] == 0) continue;
    all = objects_.RecordWrite(r.offset(), req.record_keys(i), r.length(), checksums[i],
                               r.journal_seq(), r.master_epoch()) &&
          all;
  }
  return all;
}

rpc::JournalAck SegmentHost::JournalAck() const {
  rpc::JournalAck ack;
  ack.set_segment_name(name_);
  ack.set_applied_seq(objects_.applied_seq());
  return ack;
}

void SegmentHost::AddJournalAcks(rpc::Ping* ping) const {
  *ping->add_journal_acks() = JournalAck();
  if (disk_ != nullptr) *ping->add_journal_acks() = disk_->JournalAck();
}

void SegmentHost::ApplyJournals(const rpc::PingReply& reply) {
  for (const rpc::SegmentJournal& j : reply.journals()) {
    if (disk_ != nullptr && j.segment_name() == disk_->name()) {
      disk_->ApplyJournal(j);
      continue;
    }
    if (j.segment_name() != name_) continue;
    if (j.reset()) {
      spdlog::warn(
          "segment={}: the master's journal overflowed; object list cleared (these "
          "objects would not survive a master restart)",
          name_);
    }
    uint64_t before = objects_.applied_seq();
    objects_.Apply(j);
    if (disk_ == nullptr || j.reset()) continue;
    // Newly complete objects go to the disk tier in the background (write-through ahead of
    // eviction: when the master evicts the DRAM copy, the disk copy keeps the object).
    for (const rpc::JournalEntry& e : j.entries()) {
      if (!e.freed() && e.seq() > before) disk_->Offload(e);
    }
  }
}

Status SegmentHost::Unmount(master::MasterClient& master, Deadline deadline) {
  mounted_.store(false, std::memory_order_release);
  if (disk_ != nullptr) {
    disk_->Stop();
    Status st = master.UnmountSegment(disk_->name(), deadline);
    if (!st.ok()) spdlog::warn("unmount of disk segment={}: {}", disk_->name(), st.ToString());
  }
  return master.UnmountSegment(name_, deadline);
}

}  // namespace kvpool::hosting
