// The master's read leases: one per leased GET_REPLICA_LIST, held by (client, lease id).
//
// A lease records the holds it took on objects (ObjectTable::Shard::Hold tokens, by shard) and
// ends in exactly one of three ways, each handing its holds back once for the caller to undo
// (and then to report with Ended, so that the counters fall only once no object is held):
//   - Release: its reader says its transfer is over (only the client that holds it can);
//   - TakeExpired: its TTL ran out (a reader that stalled, or never releases: older clients);
//   - TakeClients: its client was declared dead (silent for client_ttl, e.g. kill -9).
// The table never touches objects itself, so it needs no shard lock.
//
// Threading: thread-safe (kShards mutexes, by lease id). Ids are never reused within a master
// process (a release of an ended lease finds nothing).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "master/object_table.h"

namespace kvpool::master {

struct ShardHold {
  uint32_t shard = 0;
  ObjectTable::Shard::HoldToken token;
};

struct Lease {
  uint32_t client = 0;    // interned client handle (ClientRegistry)
  int64_t expiry_ns = 0;  // the TTL's end
  uint64_t bytes = 0;     // sum of the held objects' sizes
  std::vector<ShardHold> holds;
};

class LeaseTable {
 public:
  static constexpr size_t kShards = 16;

  // Ids count up from `first_id` (a random start per master process, so an id queued for a
  // master that has since restarted cannot name a lease of the new one).
  explicit LeaseTable(uint64_t first_id);
  LeaseTable(const LeaseTable&) = delete;
  LeaseTable& operator=(const LeaseTable&) = delete;

  // Records `lease` and returns its id (never 0). REQUIRES: lease.holds is not empty.
  uint64_t Add(Lease lease);
  // Ends lease `id` if `client` holds it; returns it (nullopt: not held by that client, or
  // already ended).
  std::optional<Lease> Release(uint64_t id, uint32_t client);
  // Ends every lease whose TTL ended at or before `now_ns`.
  std::vector<Lease> TakeExpired(int64_t now_ns);
  // Ends every lease of the given clients.
  std::vector<Lease> TakeClients(const std::vector<uint32_t>& clients);
  // Counts `lease`, returned by one of the three above, as over. REQUIRES: its holds are undone
  // already, and it is reported once. Until then held() still counts it: a reader of the stat
  // who sees 0 knows that no remove will be refused for these leases.
  void Ended(const Lease& lease);

  // Leases held now (taken and not yet Ended), and the bytes their objects hold (lock-free; for
  // stat and metrics).
  uint64_t held() const { return held_.load(std::memory_order_acquire); }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Slot {
    std::mutex mu;
    std::unordered_map<uint64_t, Lease> leases;  // guarded by mu
  };
  Slot& SlotOf(uint64_t id) { return slots_[id % kShards]; }
  template <typename Pred>
  std::vector<Lease> TakeIf(Pred&& pred);

  std::atomic<uint64_t> next_id_;
  std::atomic<uint64_t> held_{0};
  std::atomic<uint64_t> bytes_{0};
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace kvpool::master
