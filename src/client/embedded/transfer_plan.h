// Groups a batch's byte moves by segment so each segment costs one data request, and runs the
// requests in parallel: different segments at once, and a large segment's moves split into
// parts that move at once (one more core copying, or one more TCP connection in flight).
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/checksum.h"
#include "common/task_pool.h"
#include "rpc/endpoint.h"
#include "rpc/kvpool.pb.h"
#include "transfer/transport.h"

namespace kvpool::client {

struct SegmentMoves {
  rpc::Endpoint endpoint;
  uint64_t incarnation = 0;        // Replica.segment_incarnation of every range
  std::vector<rpc::Range> ranges;  // in the segment, in order
  std::vector<iovec> memory;       // the caller's side, concatenated in the same order
  std::vector<size_t> objects;     // batch index of each range's object
  std::vector<size_t> memory_end;  // index in `memory` one past each range's iovecs
  std::vector<char> host_records;  // per range: Replica.host_records_writes
  uint64_t bytes = 0;              // total length of `ranges`
};

// A write run's request that the hosts list what it writes (TransferPlan::Run): keys[object]
// names each object of the batch; recorded[object] (sized like keys by the caller) is set when
// a host listed the object as its bytes arrived (rpc::WriteReply.recorded).
struct HostRecords {
  const std::vector<std::string>* keys = nullptr;
  std::vector<char> recorded;
};

// One request of a run: ranges [first, last) of one segment's moves.
struct TransferPart {
  const std::string* segment_name;
  const SegmentMoves* moves;
  size_t first;
  size_t last;
};

class TransferPlan {
 public:
  // A segment's moves are split into parts of at least this many bytes (one per worker + 1).
  static constexpr uint64_t kMinPartBytes = 4ull << 20;

  // `workers` runs the parts alongside the calling thread; null: one part per segment, run one
  // after another on the calling thread. The pool must outlive Run.
  explicit TransferPlan(TaskPool* workers = nullptr) : workers_(workers) {}

  // Adds one replica's move: `memory` (exactly replica.length() bytes) <-> the replica's range,
  // carrying the replica's grant (a tenant's; rpc/grant.h) along to the segment host.
  // Errors: INVALID_REPLICA when the master sent an unparsable endpoint.
  Status Add(size_t object, const rpc::Replica& replica, std::span<const iovec> memory);

  // Runs every segment's moves (write: memory -> segments; read: segments -> memory) with
  // `transport_for(segment_name)` (called from several threads at once when the plan has
  // workers), recording a failed move's status for each of its objects (for a read whose
  // transport reports each range's outcome, SegmentRanges::range_status, only for the objects
  // of the ranges that failed).
  // `checksums` (writes only; null: none): sized like `per_object`, receives ChecksumOf of
  // each written object's memory, computed by the thread that moves the object's first
  // replica right before the transport reads it (SegmentRanges::before_ranges), so a batch's
  // hashing is spread over the same threads as its copies and each object is copied from
  // cache just after it was hashed. An object whose move failed may be left unhashed (0).
  // `records` (writes with `checksums` only; null: none): each object of one replica is named
  // to its host, where the host lists writes (SegmentRanges::record_keys).
  template <typename TransportFor>
  void Run(bool write, TransportFor&& transport_for, Deadline deadline,
           std::vector<Status>& per_object, std::vector<uint64_t>* checksums = nullptr,
           HostRecords* records = nullptr) {
    const std::vector<TransferPart> parts = Parts();
    const std::vector<std::vector<size_t>> hashed_by = checksums != nullptr
                                                           ? HashedBy(parts, per_object.size())
                                                           : std::vector<std::vector<size_t>>{};
    const std::vector<uint32_t> replicas =
        records != nullptr ? ReplicaCounts(per_object.size()) : std::vector<uint32_t>{};
    std::vector<Status> part_status(parts.size());
    std::vector<std::vector<Status>> range_status(parts.size());  // reads: set when failed
    auto run_part = [&](size_t p) {
      const TransferPart& part = parts[p];
      const SegmentMoves& m = *part.moves;
      const size_t mem_first = part.first == 0 ? 0 : m.memory_end[part.first - 1];
      const size_t mem_last = m.memory_end[part.last - 1];
      transfer::SegmentRanges where{
          part.segment_name, &m.endpoint,
          std::span<const rpc::Range>(m.ranges.data() + part.first, part.last - part.first),
          m.incarnation};
      where.stall_timeout = stall_;
      std::span<const iovec> memory(m.memory.data() + mem_first, mem_last - mem_first);
      transfer::Transport& t = transport_for(*part.segment_name);
      if (!write) {
        // Each range's own outcome, when the transport can tell: a corrupt object fails its
        // own key, not every key of the request.
        std::vector<Status> each;
        where.range_status = &each;
        part_status[p] = t.Read(where, memory, deadline);
        // Kept only when it names a failed range: a failed request whose ranges all claim to
        // be good (a confused or hostile host) fails every range, never returns its bytes.
        if (!part_status[p].ok() && each.size() == part.last - part.first &&
            std::any_of(each.begin(), each.end(), [](const Status& st) { return !st.ok(); })) {
          range_status[p] = std::move(each);
        }
        return;
      }
      if (hashed_by.empty() || hashed_by[p].empty()) {
        part_status[p] = t.Write(where, memory, deadline);
        return;
      }
      // Each object is hashed right before the transport reads it (see before_ranges); any the
      // transport did not hand over are hashed after.
      std::vector<char> unhashed(part.last - part.first, 0);
      for (size_t r : hashed_by[p]) unhashed[r - part.first] = 1;
      auto hash = [&](size_t k) {
        if (unhashed[k] == 0) return;
        const size_t r = part.first + k;
        (*checksums)[m.objects[r]] = ChecksumOf(MemoryOf(m, r));
        unhashed[k] = 0;
      };
      const std::function<void(size_t, size_t)> before = [&](size_t first, size_t last) {
        for (size_t k = first; k < last && k < unhashed.size(); ++k) hash(k);
      };
      where.before_ranges = &before;
      // The objects this part hashes, on hosts that list them: named to the host. Only an
      // object of one replica: a host that lists an object of several would be the only one
      // to know it if the commit's journal never reached the others (a master cut off from
      // the nodes), so those wait for an acknowledgement as before.
      std::vector<std::string_view> record_keys;
      if (records != nullptr) {
        record_keys.resize(unhashed.size());
        bool any = false;
        for (size_t r : hashed_by[p]) {
          if (m.host_records[r] == 0 || replicas[m.objects[r]] != 1) continue;
          record_keys[r - part.first] = (*records->keys)[m.objects[r]];
          any = true;
        }
        if (!any) record_keys.clear();
      }
      const std::function<uint64_t(size_t)> record_checksum = [&](size_t k) -> uint64_t {
        return record_keys[k].empty() || unhashed[k] != 0 ? 0
                                                          : (*checksums)[m.objects[part.first + k]];
      };
      bool recorded = false;
      if (!record_keys.empty()) {
        where.record_keys = &record_keys;
        where.record_checksum = &record_checksum;
        where.recorded = &recorded;
      }
      part_status[p] = t.Write(where, memory, deadline);
      if (part_status[p].ok()) {
        for (size_t k = 0; k < unhashed.size(); ++k) hash(k);
      }
      if (part_status[p].ok() && recorded) {
        for (size_t k = 0; k < record_keys.size(); ++k) {
          if (!record_keys[k].empty()) records->recorded[m.objects[part.first + k]] = 1;
        }
      }
    };
    if (workers_ != nullptr && parts.size() > 1) {
      workers_->ParallelFor(parts.size(), run_part);
    } else {
      for (size_t p = 0; p < parts.size(); ++p) run_part(p);
    }
    // An object with replicas in several segments appears in several parts: merged here, on
    // one thread, keeping its first failure.
    failed_.clear();
    for (size_t p = 0; p < parts.size(); ++p) {
      if (part_status[p].ok()) continue;
      failed_.try_emplace(*parts[p].segment_name, part_status[p]);
      const std::vector<Status>& each = range_status[p];
      for (size_t r = parts[p].first; r < parts[p].last; ++r) {
        const Status& failed = each.empty() ? part_status[p] : each[r - parts[p].first];
        if (failed.ok()) continue;
        Status& st = per_object[parts[p].moves->objects[r]];
        if (st.ok()) st = failed;
      }
    }
  }

  bool empty() const { return segments_.empty(); }
  // The segments whose moves failed in the last Run, each with its first failure.
  const std::map<std::string, Status>& failed_segments() const { return failed_; }
  // Moves of later Runs give up on a peer that makes no progress this long
  // (transfer::SegmentRanges::stall_timeout); zero (the default): only the deadline bounds them.
  void set_stall_timeout(Clock::duration stall) { stall_ = stall; }

 private:
  // Each segment's moves as consecutive parts of about equal bytes.
  std::vector<TransferPart> Parts() const;
  // For each part, the ranges (indexes into its moves) whose object it hashes: each object's
  // first range in part order, so every object is hashed once whatever its replica count.
  static std::vector<std::vector<size_t>> HashedBy(const std::vector<TransferPart>& parts,
                                                   size_t objects);
  // The caller's memory of range `r` of `m`.
  static std::span<const iovec> MemoryOf(const SegmentMoves& m, size_t r);
  // How many replicas of each of `objects` objects the plan moves.
  std::vector<uint32_t> ReplicaCounts(size_t objects) const;

  TaskPool* workers_;
  Clock::duration stall_{0};
  // By segment name and incarnation: replicas of two incarnations of one name (a location
  // from before a host restarted beside one from after) go in separate requests.
  std::map<std::pair<std::string, uint64_t>, SegmentMoves> segments_;
  std::map<std::string, Status> failed_;  // see failed_segments()
};

// The first `length` bytes of `buffers` as iovecs (buffers must hold at least that many).
std::vector<iovec> Prefix(const std::vector<iovec>& buffers, uint64_t length);
uint64_t TotalLength(const std::vector<iovec>& buffers);

}  // namespace kvpool::client
