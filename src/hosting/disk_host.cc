#include "hosting/disk_host.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "common/checksum.h"
#include "common/random_id.h"
#include "common/units.h"

namespace kvpool::hosting {
namespace {

// Chunks of a mount's object list, well under the frame's meta limit.
constexpr size_t kMountChunkBytes = 16 << 20;
// A TIER_UPDATE add the master could not take now (a reader's lease, or no answer) is sent
// again after this long, up to kMaxAddTries times while the master answers.
constexpr auto kRetryDelay = std::chrono::milliseconds(200);
constexpr int kMaxAddTries = 50;
// Most victims one eviction round asks the master to drop.
constexpr size_t kMaxVictims = 256;
}  // namespace

Result<std::unique_ptr<DiskHost>> DiskHost::Open(const DiskHostOptions& options) {
  auto tier = disk::DiskTier::Open(options.tier);
  if (!tier.ok()) return tier.status();
  return std::unique_ptr<DiskHost>(new DiskHost(options, std::move(tier).value()));
}

DiskHost::DiskHost(const DiskHostOptions& options, std::unique_ptr<disk::DiskTier> tier)
    : options_(options),
      tier_(std::move(tier)),
      incarnation_(RandomU64() | 1),
      read_buffers_(disk::ReadBuffers::Create(tier_->alignment(), kKeptReadBufferBytes)) {
  StartReaders();
}

DiskHost::~DiskHost() { Stop(); }

void DiskHost::Bind(const std::string& dram_name, const transfer::SegmentTable* dram) {
  dram_name_ = dram_name;
  name_ = dram_name + "#disk";
  dram_ = dram;
  bound_.store(true, std::memory_order_release);
}

rpc::StoredObject DiskHost::Stored(const disk::DiskObject& o) {
  rpc::StoredObject s;
  s.set_key(o.key);
  s.set_offset(o.offset);
  s.set_size(o.size);
  s.set_checksum(o.checksum);
  return s;
}

Status DiskHost::Mount(master::MasterClient& master, Deadline deadline) {
  std::vector<disk::DiskObject> objects = tier_->Objects();
  rpc::MountSegment req;
  req.set_segment_name(name_);
  req.set_endpoint(dram_name_);
  req.set_size(tier_->stats().capacity);
  req.set_incarnation(incarnation_);
  req.set_tier(rpc::TIER_DISK);
  size_t begin = 0, restored = 0;
  Result<rpc::MountSegmentReply> r = Status::Ok();
  do {
    rpc::MountSegment chunk = req;
    size_t bytes = 0, end = begin;
    while (end < objects.size() && bytes < kMountChunkBytes) {
      bytes += objects[end].key.size() + 48;
      *chunk.add_objects() = Stored(objects[end++]);
    }
    chunk.set_more_objects(end < objects.size());
    r = master.MountSegmentAs(std::move(chunk), deadline);
    if (!r.ok()) return r.status();
    restored += r->objects_restored();
    begin = end;
  } while (begin < objects.size());
  {
    std::lock_guard lock(mu_);
    // A new segment at the master (first mount, a restarted master, or ours dropped) starts a
    // new journal; the same one continues where we were.
    if (r->segment_id() != mounted_id_ || r->master_epoch() != mounted_epoch_) applied_seq_ = 0;
    mounted_id_ = r->segment_id();
    mounted_epoch_ = r->master_epoch();
    master_ = &master;
    if (!thread_.joinable() && !stop_) {
      thread_ = std::thread([this] { Run(); });
      stager_ = std::thread([this] { StageLoop(); });
    }
  }
  spdlog::info("mounted disk segment={} size={} objects_listed={} objects_restored={}", name_,
               FormatSize(tier_->stats().capacity), objects.size(), restored);
  return Status::Ok();
}

void DiskHost::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  stage_cv_.notify_all();
  if (stager_.joinable()) stager_.join();
  if (thread_.joinable()) thread_.join();
  StopReaders();
}

rpc::JournalAck DiskHost::JournalAck() const {
  rpc::JournalAck ack;
  ack.set_segment_name(name_);
  std::lock_guard lock(mu_);
  ack.set_applied_seq(applied_seq_);
  return ack;
}

void DiskHost::ApplyJournal(const rpc::SegmentJournal& journal) {
  if (journal.reset()) {
    spdlog::warn(
        "disk segment={}: the master's journal overflowed; frees in it were lost (their "
        "space stays taken until the tier evicts it)",
        name_);
  }
  std::vector<uint64_t> frees;
  {
    std::lock_guard lock(mu_);
    for (const rpc::JournalEntry& e : journal.entries()) {
      if (e.seq() <= applied_seq_) continue;  // re-delivered
      applied_seq_ = e.seq();
      if (!e.freed()) continue;  // the master journals no commits here
      if (tier_->Find(e.offset(), e.size())) frees.push_back(e.offset());
      doomed_.erase(e.offset());
    }
  }
  if (!frees.empty()) tier_->Free(frees);
}

void DiskHost::Offload(const rpc::JournalEntry& commit) {
  {
    std::lock_guard lock(mu_);
    auto promoting = promoting_dram_.find(commit.offset());
    if (promoting != promoting_dram_.end() && promoting->second == commit.key()) {
      promoting_dram_.erase(promoting);  // a promoted copy: its object is on disk already
      return;
    }
    if (stop_ || queue_.size() >= options_.offload_queue) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    queue_.push_back(Pending{commit.key(), commit.offset(), commit.size(), commit.checksum()});
  }
  stage_cv_.notify_one();
}

void DiskHost::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, kRetryDelay, [this] {
      return stop_ || staged_.has_value() || !promote_queue_.empty() || !suspects_.empty();
    });
    if (stop_) break;
    std::optional<StagedBatch> staged = std::move(staged_);
    staged_.reset();
    if (staged) stage_cv_.notify_one();  // the stager copies the next batch meanwhile
    std::vector<disk::DiskObject> promote = TakeBatch(promote_queue_, options_.batch_bytes);
    std::vector<disk::DiskObject> suspects(std::make_move_iterator(suspects_.begin()),
                                           std::make_move_iterator(suspects_.end()));
    suspects_.clear();
    lock.unlock();
    if (staged) WriteStaged(std::move(*staged));
    if (!suspects.empty()) CheckSuspects(std::move(suspects));
    if (!promote.empty()) PromoteBatch(std::move(promote));
    RetryDue();
    if (!suspect_retries_.empty()) {
      const auto now = Clock::now();
      std::vector<disk::DiskObject> due;
      std::erase_if(suspect_retries_, [&](Retry& r) {
        if (r.due > now) return false;
        due.push_back(std::move(r.obj));
        return true;
      });
      if (!due.empty()) CheckSuspects(std::move(due));
    }
    lock.lock();
  }
}

void DiskHost::ReportAdds(std::vector<disk::DiskObject> written, int tries) {
  if (written.empty()) return;
  auto r = SendTierUpdate(written, {});
  if (!r.ok()) {
    // Perhaps applied: keep the copies (never free what the master may list) and ask again.
    if (!master_error_logged_.exchange(true)) {
      spdlog::warn("disk segment={}: tier update failed: {} (retrying)", name_,
                   r.status().ToString());
    }
    for (disk::DiskObject& o : written) {
      retries_.push_back(Retry{std::move(o), Clock::now() + kRetryDelay, tries});
    }
    return;
  }
  master_error_logged_.store(false);
  std::vector<uint64_t> frees;
  for (size_t i = 0; i < written.size(); ++i) {
    auto code = static_cast<ErrorCode>(r->codes(static_cast<int>(i)));
    if (code == ErrorCode::OK || code == ErrorCode::OBJECT_ALREADY_EXISTS) {
      // ALREADY_EXISTS: listed already (a re-mount listed it before this retry).
      if (code == ErrorCode::OK) offloaded_.fetch_add(1, std::memory_order_relaxed);
    } else if (code == ErrorCode::OBJECT_HAS_LEASE && tries + 1 < kMaxAddTries) {
      retries_.push_back(Retry{std::move(written[i]), Clock::now() + kRetryDelay, tries + 1});
    } else {
      // Never listed: the object is gone, changed, or stayed leased too long.
      failed_.fetch_add(1, std::memory_order_relaxed);
      frees.push_back(written[i].offset);
    }
  }
  if (!frees.empty()) tier_->Free(frees);
}

void DiskHost::RetryDue() {
  if (retries_.empty()) return;
  auto now = Clock::now();
  std::vector<disk::DiskObject> due;
  int tries = 0;
  std::erase_if(retries_, [&](Retry& r) {
    if (r.due > now) return false;
    // Freed meanwhile (a FREE of a re-mount that did not keep it): nothing to report.
    if (tier_->Find(r.obj.offset, r.obj.size)) {
      tries = std::max(tries, r.tries);
      due.push_back(std::move(r.obj));
    }
    return true;
  });
  ReportAdds(std::move(due), tries);
}

void DiskHost::MakeRoom(uint64_t need) {
  std::unordered_set<uint64_t> waiting;  // offsets whose add is not answered yet: not victims
  for (const Retry& r : retries_) waiting.insert(r.obj.offset);
  std::vector<disk::DiskObject> victims;
  uint64_t got = 0;
  {
    std::lock_guard lock(mu_);
    for (disk::DiskObject& o : tier_->LruVictims(kMaxVictims + waiting.size() + doomed_.size())) {
      if (got >= need || victims.size() >= kMaxVictims) break;
      if (waiting.count(o.offset) != 0 || doomed_.count(o.offset) != 0) continue;
      got += tier_->Reserved(o.size);
      victims.push_back(std::move(o));
    }
  }
  if (victims.empty()) return;
  std::vector<uint64_t> frees;
  if (!Unlist(victims, &frees, nullptr)) return;  // nothing is freed that the master may list
  evicted_.fetch_add(tier_->Free(frees), std::memory_order_relaxed);
}

Result<rpc::CodesReply> DiskHost::SendTierUpdate(std::span<const disk::DiskObject> added,
                                                 std::span<const disk::DiskObject> dropped) {
  master::MasterClient* master;
  {
    std::lock_guard lock(mu_);
    master = master_;
  }
  std::vector<rpc::StoredObject> add, drop;
  add.reserve(added.size());
  drop.reserve(dropped.size());
  for (const disk::DiskObject& o : added) add.push_back(Stored(o));
  for (const disk::DiskObject& o : dropped) drop.push_back(Stored(o));
  return master->TierUpdate(name_, add, drop, DeadlineAfter(options_.rpc_timeout));
}

bool DiskHost::Unlist(std::vector<disk::DiskObject>& objects, std::vector<uint64_t>* frees,
                      std::vector<disk::DiskObject>* held) {
  auto r = SendTierUpdate({}, objects);
  if (!r.ok()) return false;
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < objects.size(); ++i) {
    auto code = static_cast<ErrorCode>(r->codes(static_cast<int>(i)));
    if (code == ErrorCode::OK) {
      frees->push_back(objects[i].offset);
    } else if (code == ErrorCode::OBJECT_NOT_FOUND) {
      doomed_.insert(objects[i].offset);  // the master freed it: its FREE frees the space
    } else if (code == ErrorCode::OBJECT_HAS_LEASE && held != nullptr) {
      held->push_back(std::move(objects[i]));
    }
  }
  return true;
}

void DiskHost::CheckSuspects(std::vector<disk::DiskObject> suspects) {
  std::vector<disk::DiskObject> bad;
  for (disk::DiskObject& o : suspects) {
    if (!tier_->Find(o.offset, o.size)) continue;  // freed meanwhile
    std::shared_ptr<disk::AlignedBuffer> buf = read_buffers_->Acquire(tier_->Reserved(o.size));
    disk::DiskTier::ReadOp op{o.offset, o.size, buf->data()};
    if (!tier_->Read(std::span<const disk::DiskTier::ReadOp>(&op, 1), buf).ok()) {
      bad.push_back(std::move(o));
    }
  }
  if (bad.empty()) return;
  std::vector<uint64_t> frees;
  std::vector<disk::DiskObject> held;
  // Unanswered: still listed, and the next failed READ brings them back here.
  if (!Unlist(bad, &frees, &held)) return;
  for (disk::DiskObject& o : held) {
    // The reader that just failed on it may not have ended its lease yet.
    if (suspect_retries_.size() >= kMaxSuspects) break;
    suspect_retries_.push_back(Retry{std::move(o), Clock::now() + kRetryDelay, 0});
  }
  if (frees.empty()) return;
  spdlog::warn(
      "disk segment={}: {} objects failed a second read and were unlisted (a miss now, "
      "not an error)",
      name_, frees.size());
  dropped_unreadable_.fetch_add(tier_->Free(frees), std::memory_order_relaxed);
}

DiskHostStats DiskHost::stats() const {
  DiskHostStats s;
  s.tier = tier_->stats();
  {
    std::lock_guard lock(mu_);
    s.offload_queue_depth = queue_.size();
  }
  s.offloaded = offloaded_.load(std::memory_order_relaxed);
  s.offload_skipped = skipped_.load(std::memory_order_relaxed);
  s.offload_dropped = dropped_.load(std::memory_order_relaxed);
  s.offload_failed = failed_.load(std::memory_order_relaxed);
  s.evicted = evicted_.load(std::memory_order_relaxed);
  s.read_requests = read_requests_.load(std::memory_order_relaxed);
  s.read_failures = read_failures_.load(std::memory_order_relaxed);
  s.direct_reads = direct_reads_.load(std::memory_order_relaxed);
  s.promoted = promoted_.load(std::memory_order_relaxed);
  s.promote_failed = promote_failed_.load(std::memory_order_relaxed);
  s.dropped_unreadable = dropped_unreadable_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace kvpool::hosting
