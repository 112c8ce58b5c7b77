// One shard's key -> Object index: an open-addressing hash table of Object pointers.
//
// Why not std::unordered_set: its 32-byte node per object (pointer, next link, cached hash, malloc
// header) plus the bucket array cost about 42 bytes per object, a third of the master's metadata
// budget (docs/benchmarks.md, "Metadata"). Here an object costs one 8-byte slot and one control
// byte, at a load factor between 25/64 and 7/8: 10-23 bytes.
//
// Layout: a power-of-two array of slots and a parallel array of control bytes. A control byte is
// kEmpty, kDeleted (a tombstone), or the top 7 bits of the key's hash, so a probe compares keys
// only for slots whose 7 bits match (1 in 128 false candidates). Linear probing from hash & mask.
// Erase leaves a tombstone instead of shifting entries: an object never changes slot until the
// table is rebuilt (grows, or sheds tombstones), which lets a long scan run in slot ranges, one
// lock hold each (see rebuilds() and ForEachInSlots).
//
// Ownership: the index owns its objects; Erase and the destructor destroy them.
// Threading: none; the caller holds the shard's lock (ObjectTable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace kvpool::master {

class Object;

class ObjectIndex {
 public:
  ObjectIndex() = default;
  ~ObjectIndex();
  ObjectIndex(const ObjectIndex&) = delete;
  ObjectIndex& operator=(const ObjectIndex&) = delete;

  static size_t Hash(std::string_view key);

  // The object with `key`, or nullptr. `hash` must be Hash(key) (callers that also pick a
  // shard by it compute it once).
  Object* Find(std::string_view key) const;
  Object* Find(std::string_view key, size_t hash) const;
  // Takes ownership of `obj`. REQUIRES: no object with its key is in the index. May throw
  // std::bad_alloc (growing); the index is then unchanged and `obj` is destroyed.
  void Insert(Object* obj);
  // Removes and destroys `obj`. REQUIRES: `obj` is in the index.
  void Erase(Object* obj);

  size_t size() const { return size_; }
  // Slots in the table.
  size_t capacity() const { return capacity_; }
  // Times the table was rebuilt (grown, or rebuilt at the same size to shed tombstones): objects
  // keep their slots while this stays the same.
  uint64_t rebuilds() const { return rebuilds_; }

  // Calls f(Object&) for every object; f may not insert or erase.
  template <typename F>
  void ForEach(F&& f) const {
    ForEachInSlots(0, capacity_, f);
  }
  // Calls f(Object&) for the objects in slots [first, last) (clamped to capacity()); f may not
  // insert or erase.
  template <typename F>
  void ForEachInSlots(size_t first, size_t last, F&& f) const {
    if (last > capacity_) last = capacity_;
    for (size_t i = first; i < last; ++i) {
      if (IsFull(ctrl_[i])) f(*slots_[i]);
    }
  }
  // Removes and destroys every object for which f(Object&) returns true (f may change the objects
  // it keeps; it may not insert or erase). Returns how many were removed.
  template <typename F>
  size_t EraseIf(F&& f) {
    size_t erased = 0;
    for (size_t i = 0; i < capacity_; ++i) {
      if (IsFull(ctrl_[i]) && f(*slots_[i])) {
        EraseSlot(i);
        ++erased;
      }
    }
    return erased;
  }

 private:
  static constexpr uint8_t kEmpty = 0x80;
  static constexpr uint8_t kDeleted = 0xFE;
  static bool IsFull(uint8_t c) { return c < 0x80; }
  static uint8_t Tag(size_t hash) { return static_cast<uint8_t>(hash >> 57); }

  // The slot holding `key` (hash `h`), or capacity_ when absent.
  size_t FindSlot(std::string_view key, size_t h) const;
  void EraseSlot(size_t i);
  // Rebuilds the table with `capacity` slots (a power of two, > size_ / (7/8)).
  void Rebuild(size_t capacity);

  std::unique_ptr<Object*[]> slots_;
  std::unique_ptr<uint8_t[]> ctrl_;
  size_t capacity_ = 0;
  size_t size_ = 0;
  size_t tombstones_ = 0;
  uint64_t rebuilds_ = 0;
};

}  // namespace kvpool::master
