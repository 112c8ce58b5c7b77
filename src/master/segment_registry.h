// The mounted segments and the space inside them.
//
// A segment is a byte range that one client (a node, or an embedded client) contributes to the
// pool, served at its data endpoint. The registry owns one OffsetAllocator per segment and
// places replicas: preferred segments first, then in the order of the placement strategy
// (master/placement.h) among the segments that have room, never two replicas of one object on
// the same segment.
//
// Segment ids are never reused within a master process, so a ReplicaRef naming an unmounted
// segment is simply stale: Free and Describe ignore it.
//
// Threading: thread-safe. Lock order (outer to inner): an ObjectTable shard lock, then this
// registry's map lock (shared for placement, frees and lookups; exclusive for mount and
// unmount), then one segment's lock. No method calls back into the object table.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "alloc/offset_allocator.h"
#include "kvpool/status.h"
#include "master/journal_signal.h"
#include "master/object_table.h"
#include "master/placement.h"
#include "master/segment_journal.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::master {

// One replica placed by Allocate: its reference plus what a client needs to reach it.
struct Placement {
  ReplicaRef ref;
  std::string segment_name;
  std::string endpoint;
  uint64_t incarnation = 0;     // the segment's memory (MountSegment.incarnation)
  bool records_writes = false;  // its host lists written objects (MountSegment.records_writes)
  uint64_t journal_seq = 0;     // the segment journal's last sequence number at the allocation
};

// How to place one object's replicas (see Allocate).
struct PlacementRequest {
  std::span<const std::string_view> preferred;  // segment names tried first, in order
  std::span<const uint64_t> excluded;           // segment ids never used
  PlacementStrategy strategy = PlacementStrategy::kRandom;
  std::string_view client_host;   // the writer's host ("" unknown): for local_first
  bool prefer_same_host = false;  // ReplicateConfig.prefer_alloc_in_same_node
};

struct SegmentStats {
  uint64_t id = 0;
  std::string name;
  std::string endpoint;
  std::string client_id;
  uint64_t incarnation = 0;
  uint64_t capacity = 0;      // usable bytes (rounded down to the alignment)
  uint64_t used = 0;          // reserved bytes, including space awaiting a deferred free
  uint64_t replicas = 0;      // live allocations
  bool accepting = true;      // false while restoring or draining: no new replicas placed there
  uint32_t tier = kTierDram;  // kTierDisk: a host's disk tier (never placed on by the master)
  // Writers' reports that they could not reach the segment's host (MarkSuspect): how many
  // since its mount, and the last one's client and Unix time in ms (0: none).
  bool suspect = false;
  uint64_t unreachable_reports = 0;
  std::string last_unreachable_by;
  int64_t last_unreachable_unix_ms = 0;
};

// One range a re-registering host reports as holding a complete object (see Restore).
struct RestoredRange {
  uint64_t offset = 0;
  uint64_t size = 0;  // the object's size; the range reserves Reserved(size)
};

struct PoolUsage {
  uint64_t capacity = 0;
  uint64_t used = 0;
  uint64_t largest_segment = 0;  // capacity of the biggest segment
  size_t segments = 0;
};

class SegmentRegistry {
 public:
  // REQUIRES: alignment is a power of two (ValidateMasterOptions checks the flag).
  explicit SegmentRegistry(uint64_t alignment);
  SegmentRegistry(const SegmentRegistry&) = delete;
  SegmentRegistry& operator=(const SegmentRegistry&) = delete;

  uint64_t alignment() const { return alignment_; }
  // Bytes a replica of an object of `size` bytes reserves.
  uint64_t Reserved(uint64_t size) const { return (size + alignment_ - 1) & ~(alignment_ - 1); }

  // What a mount did: the segment's id, and the id of the segment it replaced (0: none).
  struct Mounted {
    uint64_t id = 0;
    uint64_t replaced = 0;
  };
  // Mounts `size` bytes of memory `incarnation` as segment `name`, owned by client `client_id`
  // (interned as `owner`). Mounting the same name again from the same client with the same
  // endpoint, size and incarnation is OK and returns the same id (the owner handle is
  // updated). The same name and endpoint with another non-zero incarnation is that host
  // restarted: the old segment is unmounted (its id returned as `replaced`; the caller drops
  // the replicas that lived there) and the new one mounted under a new id, whichever client
  // mounted the old one. A new segment mounted with `accepting` false takes no replicas until
  // SetAccepting(true).
  // Errors: INVALID_PARAMS (empty or over-long name, size below the alignment);
  // SEGMENT_ALREADY_EXISTS (the name is mounted by another client with the same or an unknown
  // incarnation, or with another endpoint, or with another size by the same client).
  // A segment of tier kTierDisk (its host's disk tier) never takes placements: its host places
  // replicas there itself and reports them (AddDiskReplica); Usage() leaves it out.
  // `from_host`: the address the mount came from over the network ("" for loopback or unknown),
  // kept for DescribeByName. `records_writes`: MountSegment.records_writes, copied into each
  // Placement there.
  Result<Mounted> Mount(std::string_view name, std::string_view client_id, uint32_t owner,
                        std::string_view endpoint, uint64_t size, uint64_t incarnation,
                        bool accepting = true, uint32_t tier = kTierDram,
                        std::string_view from_host = {}, bool records_writes = false);
  // Unmounts and returns the id. The caller drops the replicas that lived there.
  // Errors: SEGMENT_NOT_FOUND; ILLEGAL_CLIENT (mounted by another client).
  Result<uint64_t> Unmount(std::string_view name, std::string_view client_id);
  // Unmounts every segment mounted under `owner`; returns their ids.
  std::vector<uint64_t> UnmountOwnedBy(uint32_t owner);

  // Places up to `replica_num` replicas of `size` bytes on distinct segments, none in
  // `excluded`: segments named in `preferred` (in order) when they have room, then uniformly at
  // random among the others that have room. Returns fewer (possibly none) when space is short.
  // (AllocateReplicas with the random strategy.)
  std::vector<Placement> Allocate(uint64_t size, uint32_t replica_num,
                                  std::span<const std::string_view> preferred,
                                  std::span<const uint64_t> excluded = {});
  // Places up to `replica_num` replicas of `size` bytes on distinct segments: the preferred
  // ones (in order) when they have room, then the others with room in the order
  // PlacementOrder gives for the request. Returns fewer (possibly none) when space is short.
  std::vector<Placement> AllocateReplicas(uint64_t size, uint32_t replica_num,
                                          const PlacementRequest& request);
  // Frees one replica of an object of `object_size` bytes. Returns the journal entry's sequence
  // number for CommitAcked (the host dropped the range from its list once it acknowledges it);
  // a stale segment id is ignored (0).
  uint64_t Free(const ReplicaRef& r, uint64_t object_size);
  // Frees it once ReleaseDue(now_ns >= release_at_ns) runs (see put_start_release_timeout).
  void FreeLater(const ReplicaRef& r, uint64_t object_size, int64_t release_at_ns);
  // Performs the deferred frees that are due; returns how many.
  size_t ReleaseDue(int64_t now_ns);

  // ---- Segment journals (see segment_journal.h) ----
  // Records that the object `key` became complete in replica `r`. Returns the journal entry's
  // sequence number for CommitAcked; 0 when the segment is stale (nothing recorded).
  uint64_t RecordCommit(const ReplicaRef& r, std::string_view key, uint64_t size, uint64_t checksum,
                        uint8_t pin_flags);
  // A ping from `client_id` says segment `name`'s host applied its journal up to
  // `applied_seq`: records it (the segment now counts as one whose host keeps an object list)
  // and notifies ack_signal() when that is news. False when the segment is not mounted by that
  // client. Cheap; never waits.
  bool AckJournal(std::string_view name, std::string_view client_id, uint64_t applied_seq);
  // True when the entry recorded as `seq` in segment `segment_id` (a commit, or a free) is
  // applied to its host's object list or never will be: the host acknowledged it, the segment
  // is gone (unmounted, replaced), or its host keeps no list (it never acknowledged a journal
  // and did not mount with records_writes: nothing to wait for).
  bool CommitAcked(uint64_t segment_id, uint64_t seq) const;
  // Notified whenever a host acknowledges new journal entries.
  JournalSignal& ack_signal() { return ack_signal_; }
  // For a ping from `client_id`: drops the entries of segment `name` up to `applied_seq`, then
  // adds up to `max_entries` newer ones to `out`. False (nothing added) when the segment is not
  // mounted by that client.
  bool CollectJournal(std::string_view name, std::string_view client_id, uint64_t applied_seq,
                      size_t max_entries, rpc::SegmentJournal* out);
  // True when segment `name` has journal entries after `applied_seq`, or is not mounted by
  // `client_id` (a ping about it has news: the host must mount again).
  bool JournalHasAfter(std::string_view name, std::string_view client_id,
                       uint64_t applied_seq) const;
  // Notified whenever any segment's journal grows.
  JournalSignal& journal_signal() { return journal_signal_; }

  // Marks segment `name` as taking new replicas or not (restoring, draining). A non-empty
  // `client_id` must be the segment's owner.
  // Errors: SEGMENT_NOT_FOUND; ILLEGAL_CLIENT.
  Status SetAccepting(std::string_view name, bool accepting, std::string_view client_id = {});
  // Re-creates the allocations of `ranges` (ascending, non-overlapping, aligned, inside the
  // segment) in segment `segment_id`, which must hold no allocation yet. Returns one allocation
  // handle per range (nullopt where it could not be re-created, e.g. a range out of bounds).
  std::vector<std::optional<uint32_t>> Restore(uint64_t segment_id,
                                               std::span<const RestoredRange> ranges);

  // ---- Disk tiers (master_tier.cc) ----
  // The id of disk segment `name` mounted by `client_id`; `*capacity` (if not null) gets its
  // usable bytes, the bound for the ranges its host reports.
  // Errors: SEGMENT_NOT_FOUND; ILLEGAL_CLIENT (another client's, or not a disk tier).
  Result<uint64_t> DiskSegment(std::string_view name, std::string_view client_id,
                               uint64_t* capacity = nullptr) const {
    return OwnSegment(name, client_id, kTierDisk, capacity);
  }
  // True when a replica of `size` bytes at `offset` lies inside a segment of `capacity` bytes
  // at an aligned offset (the check Restore makes of a host's ranges).
  bool RangeFits(uint64_t capacity, uint64_t offset, uint64_t size) const {
    const uint64_t reserved = Reserved(size);
    return size != 0 && offset % alignment_ == 0 && reserved >= size && offset <= capacity &&
           reserved <= capacity - offset;
  }
  // The id of DRAM segment `name` mounted by `client_id` (promotion into a host's own DRAM).
  // Errors: SEGMENT_NOT_FOUND; ILLEGAL_CLIENT (another client's, or not a DRAM segment).
  Result<uint64_t> OwnDramSegment(std::string_view name, std::string_view client_id) const {
    return OwnSegment(name, client_id, kTierDram, nullptr);
  }
  // One allocation of `size` bytes on segment `segment_id` only; false when it has no room, does
  // not take new replicas (restoring, draining) or is not mounted.
  bool AllocateOn(uint64_t segment_id, uint64_t size, Placement* out);
  // Counts a replica its host placed on disk segment `segment_id` (added) or dropped itself.
  void CountDiskReplica(uint64_t segment_id, uint64_t object_size, bool added);
  // True when some disk-tier segment is mounted.
  bool AnyDiskTier() const;
  // The DRAM segments with a disk tier below them (a disk segment "<name>#disk" of the same
  // client), ascending.
  std::vector<uint64_t> DramSegmentsWithDiskTier() const;
  // The tier of segment `segment_id` (kTierDram for a stale id).
  uint32_t TierOf(uint64_t segment_id) const;

  // Fills the segment's name and endpoint (and incarnation, when asked); false for a stale id.
  bool Describe(uint64_t segment_id, std::string* name, std::string* endpoint,
                uint64_t* incarnation = nullptr) const;
  // The segment named `name`: its owner's client id, endpoint, incarnation and the host its
  // mount came from (Mount's from_host); false when no such segment is mounted.
  struct Description {
    std::string client_id, endpoint, from_host;
    uint64_t incarnation = 0;
  };
  bool DescribeByName(std::string_view name, Description* out) const;
  std::vector<SegmentStats> Stats() const;
  PoolUsage Usage() const;
  // True when some mounted segment takes new replicas (is neither restoring nor draining).
  bool AnyAccepting() const;

  // ---- Unreachable hosts (issue 30) ----
  // A writer could not reach segment `name`'s host: no new replicas are placed there until
  // ClearSuspect for its owner (the owner pinged: its process lives) or its unmount. Returns
  // false for a segment not mounted. `reporter` (the writer's client id) and `unix_ms` are kept
  // for operators (SegmentStats: which host is unreachable from whom).
  bool MarkSuspect(std::string_view name, std::string_view reporter = {}, int64_t unix_ms = 0);
  // The segments of client `owner` take replicas again (if they were suspect); returns how many
  // were. Cheap while no segment is suspect (called on every ping).
  size_t ClearSuspect(uint32_t owner);
  // The ids of the mounted segments among `names` (unknown names are skipped).
  std::vector<uint64_t> IdsOf(std::span<const std::string> names) const;
  // True when client `client_id` has a segment mounted.
  bool HostsSegments(std::string_view client_id) const;

 private:
  struct Segment {
    Segment(uint64_t id, uint64_t size, uint64_t alignment)
        : id(id), allocator(size, alignment), capacity(allocator.capacity()) {}
    const uint64_t id;
    std::string name, endpoint, client_id;  // immutable after mount
    std::string host;                       // the endpoint's host, immutable after mount
    std::string from_host;                  // Mount's from_host, immutable after mount
    uint64_t incarnation = 0;               // immutable after mount
    uint32_t tier = kTierDram;              // immutable after mount
    bool records_writes = false;            // immutable after mount
    uint32_t owner = 0;                     // guarded by the registry's map lock
    std::mutex mu;
    alloc::OffsetAllocator allocator;  // guarded by mu
    const uint64_t capacity;           // allocator.capacity(), readable without mu
    // Mirrors of the allocator, written under mu, read lock-free for placement and stats.
    std::atomic<uint64_t> used{0};
    std::atomic<uint64_t> replicas{0};
    std::atomic<bool> accepting{true};
    std::atomic<bool> suspect{false};  // see MarkSuspect
    uint64_t unreachable_reports = 0;  // guarded by mu, with the two below
    std::string last_unreachable_by;
    int64_t last_unreachable_unix_ms = 0;
    SegmentJournal journal;  // guarded by mu
    // Guarded by mu: its host keeps an object list (it has acknowledged a journal, or mounted
    // with records_writes).
    bool journal_acked = false;
  };
  struct Deferred {
    ReplicaRef ref;
    uint64_t object_size;
    int64_t release_at_ns;
  };

  // Segment `name` of tier `tier` mounted by `client_id` (DiskSegment, OwnDramSegment).
  Result<uint64_t> OwnSegment(std::string_view name, std::string_view client_id, uint32_t tier,
                              uint64_t* capacity) const;
  // Tries one allocation on `s`. REQUIRES: the map lock is held (shared is enough).
  bool TryAllocate(Segment& s, uint64_t size, Placement* out);
  // Removes `s` from every map. REQUIRES: the map lock is held exclusively.
  void EraseLocked(Segment* s);
  uint64_t FreeLocked(Segment& s, const ReplicaRef& r, uint64_t object_size);

  const uint64_t alignment_;
  mutable std::shared_mutex map_mu_;
  std::unordered_map<std::string, std::unique_ptr<Segment>> by_name_;  // guarded by map_mu_
  std::unordered_map<uint64_t, Segment*> by_id_;                       // guarded by map_mu_
  std::vector<Segment*> list_;                                         // guarded by map_mu_
  uint64_t next_id_ = 1;                                               // guarded by map_mu_
  std::atomic<size_t> suspects_{0};  // segments marked suspect (an upper bound)
  std::mutex deferred_mu_;
  std::vector<Deferred> deferred_;  // guarded by deferred_mu_
  JournalSignal journal_signal_;
  JournalSignal ack_signal_;
};

}  // namespace kvpool::master
