// The master's object index: key -> Object, in kShards shards with one mutex each.
//
// Memory per object (the budget is <= 128 bytes plus the key's bytes at 5 M objects): one heap
// block holding the 48-byte header, the replicas (24 bytes each) and the key bytes, plus one
// 32-byte hash node and about 8-16 bytes of bucket array. Client ids are interned to a u32
// (ClientRegistry); replicas hold a segment id, never a name.
//
// Threading: an Object and its shard's containers may be touched only while holding its
// shard's lock (ObjectTable::Lock / LockIndex). Pointers to an Object are valid until it is
// erased and must not be kept past the lock that produced them. size() is lock-free.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace kvpool::master {

// Where one replica lives: `offset` inside segment `segment_id`, reserved by the segment's
// allocator under handle `alloc_node`. Its reserved size is the object's size rounded up to
// the allocation alignment (SegmentRegistry::Free recomputes it).
struct ReplicaRef {
  uint64_t segment_id = 0;
  uint64_t offset = 0;
  uint32_t alloc_node = 0;
  uint32_t reserved = 0;
};

enum class ObjectState : uint8_t { kPending = 0, kComplete = 1 };

inline constexpr uint8_t kSoftPin = 1;
inline constexpr uint8_t kHardPin = 2;
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
  bool leased(int64_t now_ns) const { return !pending() && stamp_ns > now_ns; }
  bool soft_pinned() const { return (flags & kSoftPin) != 0; }
  bool hard_pinned() const { return (flags & kHardPin) != 0; }
  // PENDING: when its put started. COMPLETE: when its read lease ends (0: never leased).
  int64_t put_start_ns() const { return stamp_ns; }
  int64_t lease_until_ns() const { return stamp_ns; }

  uint64_t size = 0;
  uint64_t checksum = 0;       // XXH3-64 of the bytes, set at commit by the writer; 0: none
  int64_t stamp_ns = 0;        // see put_start_ns() / lease_until_ns()
  int64_t last_access_ns = 0;  // put start or last leased read; eviction's LRU clock
  uint32_t writer = 0;         // interned id of the client that put it
  ObjectState state = ObjectState::kPending;
  uint8_t flags = 0;  // kSoftPin | kHardPin

 private:
  Object() = default;
  friend struct ObjectDeleter;
  ReplicaRef* slots() { return reinterpret_cast<ReplicaRef*>(this + 1); }
  const ReplicaRef* slots() const { return reinterpret_cast<const ReplicaRef*>(this + 1); }

  uint16_t key_len_ = 0;
  uint8_t replica_count_ = 0;
  uint8_t replica_capacity_ = 0;
};
static_assert(sizeof(Object) == 48, "Object header grew: check the per-object memory budget");
static_assert(sizeof(ReplicaRef) == 24);

class ObjectTable {
 public:
  static constexpr size_t kShards = 64;

  // One shard's index. Use only under its lock.
  class Shard {
   public:
    Object* Find(std::string_view key) const;
    // Inserts `obj`, returns it. REQUIRES: its key is absent.
    Object* Insert(ObjectPtr obj);
    // Erases and destroys `obj`. REQUIRES: `obj` is in this shard.
    void Erase(Object* obj);
    // PENDING -> COMPLETE. REQUIRES: obj is pending and in this shard.
    void MarkComplete(Object* obj);
    // Calls f(Object&) for every object; f may not insert or erase.
    template <typename F>
    void ForEach(F&& f) const {
      for (const auto& p : objects_) f(*p);
    }
    // The hash table's buckets: an object stays in its bucket until the table rehashes, which
    // changes bucket_count(). Lets a long scan run in short pieces, one lock hold each.
    size_t bucket_count() const { return objects_.bucket_count(); }
    // Calls f(const Object&) for every object in buckets [first, last) (clamped to
    // bucket_count()); f may not insert or erase.
    template <typename F>
    void ForEachInBuckets(size_t first, size_t last, F&& f) const {
      last = std::min(last, objects_.bucket_count());
      for (size_t b = first; b < last; ++b) {
        for (auto it = objects_.begin(b); it != objects_.end(b); ++it) f(**it);
      }
    }
    // Erases every object for which f(Object&) returns true (f may change objects it keeps).
    // Returns how many were erased.
    size_t EraseIf(const std::function<bool(Object&)>& f);
    // The pending objects (a small side index, so reclaiming stale puts does not scan all).
    const std::unordered_set<Object*>& pending() const { return pending_; }
    size_t size() const { return objects_.size(); }

   private:
    friend class ObjectTable;
    struct Hash {
      using is_transparent = void;
      // Deliberately not noexcept: libstdc++ then caches the hash in the node (same 32-byte
      // malloc chunk), so rehashing and bucket scans do not touch the objects.
      size_t operator()(std::string_view k) const { return std::hash<std::string_view>()(k); }
      size_t operator()(const ObjectPtr& o) const { return (*this)(o->key()); }
    };
    struct Eq {
      using is_transparent = void;
      static std::string_view K(std::string_view k) { return k; }
      static std::string_view K(const ObjectPtr& o) { return o->key(); }
      template <typename A, typename B>
      bool operator()(const A& a, const B& b) const {
        return K(a) == K(b);
      }
    };
    std::unordered_set<ObjectPtr, Hash, Eq> objects_;
    std::unordered_set<Object*> pending_;
    std::atomic<size_t>* total_ = nullptr;  // the table's object count
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

  static size_t ShardOf(std::string_view key);
  // Locks the shard that holds (or would hold) `key`.
  Locked Lock(std::string_view key) { return LockIndex(ShardOf(key)); }
  Locked LockIndex(size_t i) { return Locked(shards_[i].mu, shards_[i].shard); }
  // Objects in the table (lock-free; exact when no operation is in flight).
  size_t size() const { return total_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Slot {
    std::mutex mu;
    Shard shard;  // guarded by mu
  };
  std::atomic<size_t> total_{0};
  std::unique_ptr<Slot[]> shards_;
};

}  // namespace kvpool::master
