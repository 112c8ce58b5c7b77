// Eviction: removes objects to make room, approximately least-recently-used.
//
// Candidates are complete objects that are neither leased nor hard-pinned; pending objects are
// never touched. Soft-pinned objects go only after every other candidate. Among each of those,
// candidates go in classes: first objects idle for at least `min_idle` that nobody asked for
// (exists or get) since they were written, then such idle objects that were asked for, and
// last (only when the caller allows it: a put that needs room now) the younger ones. Within
// each class:
//   1. a sampling pass (up to kSamplesPerShard candidates per shard, exact for smaller shards)
//      estimates the last_access cutoff below which the candidates hold the target bytes;
//   2. an eviction pass removes candidates at or below the cutoff, oldest first per shard;
//   3. should sampling have underestimated, rounds in which every shard frees its share of
//      what is left (oldest first) make up the rest.
// This approximates a global LRU without sorting or copying the whole table. An evicted member of
// an object group takes the rest of its group with it (object_groups.h).
//
// Threading: thread-safe; one eviction runs at a time (a second caller waits for the first).
// Takes shard locks one at a time: REQUIRES that the caller holds no shard lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "master/kv_events.h"
#include "master/object_table.h"
#include "master/segment_registry.h"

namespace kvpool::master {

// A copy of `o` (key, size, checksum, lease stamp, last access, writer, state, pins) on
// `replicas` instead of its own, for the caller to Erase `o` and Insert in its place: how
// demotion and the disk tier's adds and drops change an object's replicas. Erase forgets
// group membership and a soft pin's expiry, so the copy has neither: an expiring soft pin
// lapses now.
ObjectPtr WithReplicas(const Object& o, std::span<const ReplicaRef> replicas);

struct EvictionResult {
  uint64_t objects = 0;  // objects removed
  uint64_t bytes = 0;    // replica bytes freed (on the target segment when one was given)
  // Candidates left alone because their copy to a disk tier is pending (a retry may find them
  // evictable once it has landed).
  uint64_t offload_pending = 0;
};

class Evictor {
 public:
  // Both must outlive the evictor. `offload_wait_ns` (0: off): an object on a DRAM segment
  // with a disk tier below it, not on that disk yet, put or read within this long, is not a
  // candidate (its copy is pending: evicting it would lose it); counted as offload_pending.
  Evictor(ObjectTable* table, SegmentRegistry* registry, int64_t offload_wait_ns = 0)
      : table_(table), registry_(registry), offload_wait_ns_(offload_wait_ns) {}

  // Frees at least `target_bytes` of replica space, or all it can. With `segment`, only objects
  // with a replica on that segment are candidates and only bytes freed there count. An evicted
  // object loses all its DRAM replicas: one with a disk-tier replica stays there (demoted), any
  // other is removed; objects only on a disk tier are never candidates (their host evicts
  // them). `now_ns` decides which leases still hold.
  // With `tenant` (normalized, "" the default tenant), only that tenant's objects are
  // candidates and bytes count as the tenant ledger counts them (size x replicas: quotas).
  // `min_idle_ns`: objects touched (put, exists, get) more recently are spared, unless
  // `young_too`, in which case they go last (least recently used first).
  // When a disk tier is mounted (and no `tenant` is given), objects with a disk replica go
  // before any without: evicting them only demotes them (still readable, from disk), while an
  // object not yet copied to disk would be lost.
  // `why`: the reason KV events give for what it evicts (master/kv_events.h).
  EvictionResult Evict(uint64_t target_bytes, std::optional<uint64_t> segment, int64_t now_ns,
                       std::optional<std::string_view> tenant = std::nullopt,
                       int64_t min_idle_ns = 0, bool young_too = true,
                       KvRemoval why = KvRemoval::kEvictedPut);
  // Where evictions are recorded as KV events (null: off). REQUIRES: called before any Evict.
  void SetKvEvents(KvEventQueue* events) { events_ = events; }

  // Objects evicted since construction.
  uint64_t evicted_total() const { return evicted_total_.load(std::memory_order_relaxed); }
  // Evicted objects that stayed on a disk tier (demoted) since construction.
  uint64_t demoted_total() const { return demoted_total_.load(std::memory_order_relaxed); }
  // Replica bytes freed by evictions since construction (as counted toward their targets).
  uint64_t evicted_bytes_total() const {
    return evicted_bytes_total_.load(std::memory_order_relaxed);
  }

 private:
  static constexpr size_t kSamplesPerShard = 512;

  struct Pass {
    bool soft_pinned;  // which class of candidates this pass takes
    std::optional<uint64_t> segment;
    int64_t now_ns;
    std::optional<std::string_view> tenant;
    std::optional<bool> asked;  // only objects asked for (or not) since written; any: nullopt
    int64_t idle_at_most_ns;    // only objects whose last access is at or before this
    std::optional<bool> on_disk = std::nullopt;  // only objects with (or without) a disk replica
    // Objects not on disk, accessed after this, on one of these segments (ascending) are spared.
    int64_t offload_after_ns = std::numeric_limits<int64_t>::max();
    const std::vector<uint64_t>* disk_backed = nullptr;
    KvRemoval why = KvRemoval::kEvictedPut;
  };
  // True when `o` is spared under `pass`'s offload wait.
  bool OffloadPending(const Object& o, const Pass& pass) const;
  bool IsCandidate(const Object& o, const Pass& pass) const;
  // Step 1: the last_access at or below which candidates hold about `target` bytes.
  int64_t EstimateCutoff(const Pass& pass, uint64_t target);
  // Evicts candidates with last_access <= cutoff from one shard, oldest first, until `quota`
  // bytes are freed.
  // The groups of grouped objects it evicted are added to `groups`.
  EvictionResult EvictFromShard(ObjectTable::Shard& shard, uint64_t quota, int64_t cutoff,
                                const Pass& pass, std::vector<std::string>* groups);
  // One round over every shard, each freeing an equal share of what is left of `target`
  // (`share`), or everything up to the target (!share).
  EvictionResult EvictRound(const Pass& pass, uint64_t target, int64_t cutoff, bool share,
                            std::vector<std::string>* groups);
  // Evicts what is left of `groups` (an evicted member's group goes with it: all members, on
  // whichever segment; one a reader holds stays, ungrouped) and clears the list.
  EvictionResult EvictGroups(std::vector<std::string>* groups, const Pass& pass);
  // Evicts up to `target` bytes of one class of candidates.
  EvictionResult EvictClass(const Pass& pass, uint64_t target);
  // Bytes evicting `o` frees that count toward the target.
  uint64_t CountedBytes(const Object& o, const Pass& pass) const;
  // Frees `o`'s DRAM replicas. An object with a disk-tier replica stays with that one alone
  // (demoted; returns false); any other is erased (returns true). REQUIRES: o is in `shard`.
  bool EvictObject(ObjectTable::Shard& shard, Object* o, KvRemoval why);

  ObjectTable* const table_;
  SegmentRegistry* const registry_;
  const int64_t offload_wait_ns_;
  KvEventQueue* events_ = nullptr;        // set before use, then read-only
  std::mutex mu_;                         // serialises evictions
  mutable uint64_t offload_pending_ = 0;  // guarded by mu_: spared in the running Evict
  std::atomic<uint64_t> evicted_total_{0};
  std::atomic<uint64_t> evicted_bytes_total_{0};
  std::atomic<uint64_t> demoted_total_{0};
};

}  // namespace kvpool::master
