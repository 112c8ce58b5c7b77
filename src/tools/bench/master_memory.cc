#include "tools/bench/master_memory.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <random>
#include <string_view>

#include "master/master_core.h"
#include "tools/bench/payload.h"
#include "tools/bench/stats.h"

namespace kvpool::tools::bench {
namespace {

constexpr uint64_t kObjectBytes = 256 << 10;    // a HiCache page; the size only sets placement
constexpr uint64_t kSegmentBytes = 1ULL << 40;  // per segment, never mapped
constexpr size_t kPutBatch = 1024;
constexpr size_t kLookupBatch = 128;
constexpr double kDefaultFillSeconds = 45;  // --duration_s overrides it

// Resident bytes of this process.
uint64_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// A SGLang HiCache (Mooncake store) page key: the page's 64-hex-digit hash, the TP rank and
// k/v: 68 bytes.
std::string HicacheKey(uint64_t n) {
  return fmt::format("{:016x}{:016x}{:016x}{:016x}_0_k", Mix64(n), Mix64(n + 1) ^ n,
                     Mix64(n * 3 + 7), Mix64(~n));
}

std::string ToString(const rpc::CodesReply& r) {
  for (int i = 0; i < r.codes_size(); ++i) {
    if (r.codes(i) != 0) {
      return fmt::format("code {} {}", r.codes(i), i < r.messages_size() ? r.messages(i) : "");
    }
  }
  return "";
}

}  // namespace

Status RunMasterMemory(const BenchOptions& o, std::stop_token stop, std::vector<Row>& rows) {
  const uint64_t want = o.master_objects;
  const double max_fill_s = o.duration_s > 0 ? o.duration_s : kDefaultFillSeconds;
  master::MasterOptions mo;
  master::MasterCore core(mo);
  const auto now = Clock::now();
  const std::string client = "bench-master-memory";
  rpc::Ping ping;
  ping.set_client_id(client);
  KVPOOL_RETURN_IF_ERROR(core.Ping(ping, now).status());
  // Twice the objects' bytes so the master never evicts while filling.
  const uint64_t segments = std::max<uint64_t>(1, 2 * want * kObjectBytes / kSegmentBytes + 1);
  for (uint64_t s = 0; s < segments; ++s) {
    rpc::MountSegment m;
    m.set_client_id(client);
    m.set_segment_name(fmt::format("bench-node-{}", s));
    m.set_endpoint(fmt::format("127.0.0.1:{}", 20000 + s));
    m.set_size(kSegmentBytes);
    KVPOOL_RETURN_IF_ERROR(core.MountSegment(m, now).status());
  }
  rpc::Ping journal_acks;
  journal_acks.set_client_id(client);
  for (uint64_t s = 0; s < segments; ++s) {
    auto* ack = journal_acks.add_journal_acks();
    ack->set_segment_name(fmt::format("bench-node-{}", s));
    ack->set_applied_seq(UINT64_MAX);  // beyond the last entry: everything so far
  }
  std::cout << fmt::format(
      "[master_memory] filling an in-process master core with {} objects "
      "(68-byte HiCache keys, batches of {})\n",
      want, kPutBatch);
  const uint64_t rss0 = RssBytes();
  const auto t0 = BenchClock::now();
  const double cpu0 = ThreadCpuSeconds();
  uint64_t done = 0, key_bytes = 0;
  rpc::PutStart start;
  rpc::PutEnd end;
  start.set_client_id(client);
  end.set_client_id(client);
  while (done < want && !stop.stop_requested() && SecondsSince(t0) < max_fill_s) {
    const size_t n = std::min<uint64_t>(kPutBatch, want - done);
    start.clear_items();
    end.clear_commit_keys();
    for (size_t j = 0; j < n; ++j) {
      std::string key = HicacheKey(done + j);
      key_bytes += key.size();
      auto* item = start.add_items();
      item->set_size(kObjectBytes);
      *end.add_commit_keys() = key;
      item->set_key(std::move(key));
    }
    auto started = core.PutStart(start, Clock::now());
    if (!started.ok()) return started.status();
    for (const auto& r : started->results()) {
      if (r.code() != 0) {
        return Status(ErrorCodeFromInt(r.code()),
                      fmt::format("master_memory: put start failed: {}", r.message()));
      }
    }
    auto ended = core.PutEnd(end, Clock::now());
    if (!ended.ok()) return ended.status();
    if (std::string bad = ToString(*ended); !bad.empty()) {
      return Status(ErrorCode::INTERNAL_ERROR, "master_memory: put end failed: " + bad);
    }
    done += n;
    // As a live host does through its heartbeat: acknowledge the segments' journals, which
    // otherwise hold up to SegmentJournal::kDefaultCapacity unapplied entries (keys included)
    // per segment, a bounded buffer that is not per-object metadata.
    auto acked = core.Ping(journal_acks, Clock::now());
    if (!acked.ok()) return acked.status();
  }
  const double fill_s = SecondsSince(t0);
  const double fill_cpu = ThreadCpuSeconds() - cpu0;
  start.Clear();
  end.Clear();
  const uint64_t rss1 = RssBytes();
  const double per_object = done ? static_cast<double>(rss1 - rss0) / done : 0;
  const double per_key = done ? static_cast<double>(key_bytes) / done : 0;
  Row fill;
  fill.workload = "master-fill";
  fill.mode = "in-process";
  fill.batch = static_cast<int>(kPutBatch);
  fill.threads = 1;
  fill.keys = done;
  fill.busy_s = fill_s;
  fill.keys_per_s = done / std::max(fill_s, 1e-9);
  fill.cpu_s = fill_cpu;
  fill.note = fmt::format(
      "RSS +{:.0f} B/object = key {:.0f} B + {:.0f} B{}", per_object, per_key, per_object - per_key,
      done < want ? fmt::format(" (stopped at {} of {} objects after {:.0f} s)", done, want, fill_s)
                  : "");
  std::cout << fmt::format(
      "[master_memory] {} objects in {:.1f} s ({:.0f} puts/s, {:.2f} CPU-s); RSS {:.0f} MiB -> "
      "{:.0f} MiB: {:.0f} B per object = key {:.0f} B + {:.0f} B of metadata (target <= 128 B "
      "+ key)\n",
      done, fill_s, fill.keys_per_s, fill_cpu, rss0 / 1048576.0, rss1 / 1048576.0, per_object,
      per_key, per_object - per_key);
  rows.push_back(fill);
  if (done < kLookupBatch) return Status::Ok();

  // Lookups: random present keys (made beforehand), one thread, 1 s each; keys per CPU-second
  // of this thread.
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<uint64_t> pick(0, done - 1);
  std::vector<std::string> sample(65536);
  for (auto& k : sample) k = HicacheKey(pick(rng));
  size_t next = 0;
  for (std::string_view what : {"master-exists", "master-locate"}) {
    rpc::KeysRequest req;
    req.set_client_id(client);
    uint64_t keys = 0, calls = 0;
    const double c0 = ThreadCpuSeconds();
    const auto l0 = BenchClock::now();
    while (SecondsSince(l0) < 1.0 && !stop.stop_requested()) {
      req.clear_keys();
      for (size_t j = 0; j < kLookupBatch; ++j) *req.add_keys() = sample[next++ % sample.size()];
      if (what == "master-exists") {
        auto r = core.Exists(req, Clock::now());
        for (int j = 0; j < r.codes_size(); ++j) {
          if (r.codes(j) != 1) {  // 1: present
            return Status(ErrorCode::INTERNAL_ERROR,
                          fmt::format("master_memory: key={} not found", req.keys(j)));
          }
        }
      } else {
        auto r = core.GetReplicaList(req, Clock::now());
        for (int j = 0; j < r.objects_size(); ++j) {
          if (r.objects(j).code() != 0 || r.objects(j).replicas_size() == 0) {
            return Status(ErrorCode::INTERNAL_ERROR,
                          fmt::format("master_memory: key={} has no location", req.keys(j)));
          }
        }
        // A reader releases its lease once its transfer is over: part of a get's cost.
        const uint64_t lease = r.lease_id();
        core.ReleaseLeases(client, std::span<const uint64_t>(&lease, 1), Clock::now());
      }
      keys += kLookupBatch;
      ++calls;
    }
    const double cpu = ThreadCpuSeconds() - c0;
    Row row;
    row.workload = std::string(what);
    row.mode = "in-process";
    row.batch = static_cast<int>(kLookupBatch);
    row.threads = 1;
    row.calls = calls;
    row.keys = keys;
    row.busy_s = SecondsSince(l0);
    row.cpu_s = cpu;
    row.keys_per_s = keys / std::max(cpu, 1e-9);
    row.note = "keys/s per CPU-second of one thread";
    std::cout << fmt::format(
        "[master_memory] {}: {:.0f} keys per CPU-second, batches of {} "
        "(target >= 300,000)\n",
        what, row.keys_per_s, kLookupBatch);
    rows.push_back(row);
  }
  return Status::Ok();
}

}  // namespace kvpool::tools::bench
