// The master's object index: key -> Object, in kShards shards with one mutex each.
//
// Memory per object (the budget is <= 128 bytes plus the key's bytes at 5 M objects): one heap
// block holding the 40-byte header, the replicas (24 bytes each) and the key bytes, plus one
// 8-byte slot and one control byte of the shard's ObjectIndex at a load of 25/64..7/8. Client ids
// are interned to a u32 (ClientRegistry); replicas hold a segment id, never a name.
//
// Threading: an Object and its shard's containers may be touched only while holding its
// shard's lock (ObjectTable::Lock / LockIndex). Pointers to an Object are valid until it is
// erased and must not be kept past the lock that produced them. size() is lock-free.
//
// Tenants: the table keeps each tenant's replica bytes and objects in tenants() (Insert, Erase,
// EraseIf). An object's replicas may be dropped (Object::DropReplicasIf) only inside EraseIf's
// function, where the change is accounted.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "master/object_groups.h"
#include "master/object_index.h"
#include "master/tenant_ledger.h"

namespace kvpool::master {

// Where one replica lives: `offset` inside segment `segment_id`, reserved by the segment's
// allocator under handle `alloc_node`. Its reserved size is the object's size rounded up to
// the allocation alignment (SegmentRegistry::Free recomputes it). A replica on a disk tier
// (tier kTierDisk) was placed by its host, not by the master's allocator: alloc_node is unused.
inline constexpr uint32_t kTierDram = 0;
inline constexpr uint32_t kTierDisk = 1;
struct ReplicaRef {
  uint64_t segment_id = 0;
  uint64_t offset = 0;
  uint32_t alloc_node = 0;
  uint32_t tier = kTierDram;  // rpc::Tier
};
inline bool HasTier(std::span<const ReplicaRef> replicas, uint32_t tier) {
  for (const ReplicaRef& r : replicas) {
    if (r.tier == tier) return true;
  }
  return false;
}

enum class ObjectState : uint8_t { kPending = 0, kComplete = 1 };

inline constexpr uint8_t kSoftPin = 1;
inline constexpr uint8_t kHardPin = 2;
// A reader asked for it (exists or get) since it was written: eviction takes objects nobody
// asked for first. Not a pin: never journaled.
inline constexpr uint8_t kAsked = 4;
// A member of an object group (ObjectTable::groups()).
inline constexpr uint8_t kGrouped = 8;
// Its soft pin lapses (Shard::SetSoftPinExpiry).
inline constexpr uint8_t kSoftPinExpires = 16;
// Most replicas one object may have (ReplicateConfig.replica_num above this is refused).
inline constexpr uint32_t kMaxReplicas = 16;

class Object;
struct ObjectDeleter {
  void operator()(Object* o) const;
};
using ObjectPtr = std::unique_ptr<Object, ObjectDeleter>;

// One object: a fixed header followed, in the same heap block, by `replica_capacity` replica
// slots and the key bytes. Times are steady_clock nanoseconds since its epoch.
class Object {
 public:
  // REQUIRES: 1 <= key.size() <= 65535; replicas.size() <= kMaxReplicas. May throw bad_alloc.
  static ObjectPtr Create(std::string_view key, uint64_t size,
                          std::span<const ReplicaRef> replicas);

  std::string_view key() const {
    return {reinterpret_cast<const char*>(slots() + replica_capacity_), key_len_};
  }
  std::span<ReplicaRef> replicas() { return {slots(), replica_count_}; }
  std::span<const ReplicaRef> replicas() const { return {slots(), replica_count_}; }
  // Removes the replicas for which `drop` is true; returns how many were removed.
  size_t DropReplicasIf(const std::function<bool(const ReplicaRef&)>& drop);

  bool pending() const { return state == ObjectState::kPending; }
  // A read lease holds it: some reader's transfer is in flight (Shard::Hold), and the newest of
  // those leases' TTLs has not run out. An object whose holds all lapsed (readers stalled or gone
  // silent) is not leased even before the housekeeping sweep ends them.
  bool leased(int64_t now_ns) const { return !pending() && stamp_ns > now_ns; }
  bool soft_pinned() const { return (flags & kSoftPin) != 0; }
  bool hard_pinned() const { return (flags & kHardPin) != 0; }
  bool asked() const { return (flags & kAsked) != 0; }
  // PENDING: when its put started. COMPLETE: the latest end of its read leases' TTLs (0: no
  // lease holds it; Shard::Unhold resets it when the last one ends).
  int64_t put_start_ns() const { return stamp_ns; }
  int64_t lease_until_ns() const { return stamp_ns; }
  // Eviction's LRU clock: put start or last leased read, kept in ticks of 2^24 ns (16.8 ms) in
  // 32 bits to keep the header small. Eviction order within one tick is arbitrary; the clock
  // wraps after 2.28 years of steady_clock (host uptime), after which objects look older than they
  // are for one LRU generation.
  int64_t last_access_ns() const { return static_cast<int64_t>(access_tick_) << kTickShift; }
  void set_last_access_ns(int64_t ns) {
    access_tick_ = static_cast<uint32_t>(static_cast<uint64_t>(ns) >> kTickShift);
  }

  uint64_t size = 0;
  uint64_t checksum = 0;  // XXH3-64 of the bytes, set at commit by the writer; 0: none
  int64_t stamp_ns = 0;   // see put_start_ns() / lease_until_ns()
  uint32_t writer = 0;    // interned id of the client that put it
  ObjectState state = ObjectState::kPending;
  uint8_t flags = 0;  // kSoftPin | kHardPin
  bool held = false;  // the shard's hold map has an entry for it (see Shard::Hold)

 private:
  static constexpr int kTickShift = 24;
  Object() = default;
  friend struct ObjectDeleter;
  ReplicaRef* slots() { return reinterpret_cast<ReplicaRef*>(this + 1); }
  const ReplicaRef* slots() const { return reinterpret_cast<const ReplicaRef*>(this + 1); }

  uint32_t access_tick_ = 0;  // see last_access_ns()
  uint16_t key_len_ = 0;
  uint8_t replica_count_ = 0;
  uint8_t replica_capacity_ = 0;
};
static_assert(sizeof(Object) == 40, "Object header grew: check the per-object memory budget");
static_assert(sizeof(ReplicaRef) == 24);

// A key with its hash, computed once for both the shard choice and the shard's index (a batch
// lookup of 128 keys otherwise hashes each twice).
struct HashedKey {
  explicit HashedKey(std::string_view k) : key(k), hash(ObjectIndex::Hash(k)) {}
  std::string_view key;
  size_t hash;
};

class ObjectTable {
 public:
  static constexpr size_t kShards = 64;

  // One shard's index. Use only under its lock.
  class Shard {
   public:
    Object* Find(std::string_view key) const;
    Object* Find(const HashedKey& key) const { return objects_.Find(key.key, key.hash); }
    // Inserts `obj`, returns it. REQUIRES: its key is absent.
    Object* Insert(ObjectPtr obj);
    // Erases and destroys `obj`. REQUIRES: `obj` is in this shard.
    void Erase(Object* obj);
    // PENDING -> COMPLETE. REQUIRES: obj is pending and in this shard.
    void MarkComplete(Object* obj);
    // Calls f(Object&) for every object; f may not insert or erase.
    template <typename F>
    void ForEach(F&& f) const {
      objects_.ForEach(f);
    }
    // The index's slots: an object stays in its slot until the index is rebuilt, which changes
    // layout_version(). Lets a long scan run in short pieces, one lock hold each.
    size_t slot_count() const { return objects_.capacity(); }
    uint64_t layout_version() const { return objects_.rebuilds(); }
    // Calls f(Object&) for every object in slots [first, last) (clamped to slot_count()); f may
    // not insert or erase.
    template <typename F>
    void ForEachInSlots(size_t first, size_t last, F&& f) const {
      objects_.ForEachInSlots(first, last, f);
    }
    // Erases every object for which f(Object&) returns true (f may change objects it keeps).
    // Returns how many were erased.
    size_t EraseIf(const std::function<bool(Object&)>& f);
    // Read leases. Hold records one more reader of the complete object `obj` (its stamp_ns is
    // extended to `until_ns`) and returns the token that ends exactly this hold: Unhold(obj,
    // token) with a token of an object since erased (even if a new object now has the same
    // address) does nothing. Returns true when it ended the last hold, so the object is no
    // longer leased. Erasing an object drops its holds.
    struct HoldToken {
      const Object* obj = nullptr;
      uint64_t generation = 0;
    };
    HoldToken Hold(Object* obj, int64_t until_ns);
    bool Unhold(const HoldToken& token);
    // Objects held by at least one lease.
    size_t held_count() const { return holds_.size(); }
    // The soft pin of `obj` lapses at `until_ns` (ExpireSoftPins clears it then).
    void SetSoftPinExpiry(Object* obj, int64_t until_ns);
    // When the soft pin of `obj` lapses; 0 when it never does (or it has none).
    int64_t SoftPinUntil(const Object* obj) const;
    // Clears the soft pins that lapsed by `now_ns`; returns how many.
    size_t ExpireSoftPins(int64_t now_ns);
    // The pending objects (a small side index, so reclaiming stale puts does not scan all).
    const std::unordered_set<Object*>& pending() const { return pending_; }
    size_t size() const { return objects_.size(); }

   private:
    friend class ObjectTable;
    ObjectIndex objects_;
    std::unordered_set<Object*> pending_;
    struct HoldEntry {
      uint32_t readers = 0;
      uint64_t generation = 0;
    };
    // Objects with holds (Object::held): a side map, so an object without readers carries no
    // lease state beyond its header. Entries are dropped when their object is erased.
    std::unordered_map<const Object*, HoldEntry> holds_;
    uint64_t next_generation_ = 1;
    std::unordered_map<const Object*, int64_t> soft_pin_until_;  // kSoftPinExpires objects
    ObjectGroups* groups_ = nullptr;                             // the table's groups
    // What erasing `o` undoes beside the index (holds, soft pin expiry, group membership).
    void Forget(const Object& o);
    std::atomic<size_t>* total_ = nullptr;  // the table's object count
    TenantLedger* ledger_ = nullptr;        // the table's per-tenant totals
  };

  // A shard with its lock held; movable, not copyable.
  class Locked {
   public:
    Locked(std::mutex& mu, Shard& s) : lock_(mu), shard_(&s) {}
    Shard* operator->() { return shard_; }
    Shard& operator*() { return *shard_; }

   private:
    std::unique_lock<std::mutex> lock_;
    Shard* shard_;
  };

  ObjectTable();
  ObjectTable(const ObjectTable&) = delete;
  ObjectTable& operator=(const ObjectTable&) = delete;

  static size_t ShardOf(std::string_view key) { return ShardOfHash(ObjectIndex::Hash(key)); }
  static size_t ShardOfHash(size_t hash);
  // Locks the shard that holds (or would hold) `key`.
  Locked Lock(std::string_view key) { return LockIndex(ShardOf(key)); }
  Locked Lock(const HashedKey& key) { return LockIndex(ShardOfHash(key.hash)); }
  Locked LockIndex(size_t i) { return Locked(shards_[i].mu, shards_[i].shard); }
  // Objects in the table (lock-free; exact when no operation is in flight).
  size_t size() const { return total_.load(std::memory_order_relaxed); }
  // Replica bytes and objects per tenant (thread-safe).
  const TenantLedger& tenants() const { return ledger_; }
  // Object groups (group ids, members); see object_groups.h for the lock order.
  ObjectGroups& groups() { return groups_; }
  // What `o` counts for its tenant: its size times its replicas.
  static uint64_t TenantBytes(const Object& o) { return o.size * o.replicas().size(); }

 private:
  struct alignas(64) Slot {
    std::mutex mu;
    Shard shard;  // guarded by mu
  };
  std::atomic<size_t> total_{0};
  TenantLedger ledger_;
  ObjectGroups groups_;
  std::unique_ptr<Slot[]> shards_;
};

}  // namespace kvpool::master
