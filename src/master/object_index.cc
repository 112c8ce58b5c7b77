#include "master/object_index.h"

#include <cassert>
#include <cstring>
#include <functional>

#include "master/object_table.h"

namespace kvpool::master {
namespace {

constexpr size_t kMinCapacity = 16;

// Rebuild before used slots (objects and tombstones) pass 7/8 of the table: probes stay short
// and every probe sequence meets an empty slot.
bool OverLoad(size_t used, size_t capacity) { return used * 8 > capacity * 7; }

}  // namespace

ObjectIndex::~ObjectIndex() {
  for (size_t i = 0; i < capacity_; ++i) {
    if (IsFull(ctrl_[i])) ObjectDeleter()(slots_[i]);
  }
}

size_t ObjectIndex::Hash(std::string_view key) { return std::hash<std::string_view>()(key); }

size_t ObjectIndex::FindSlot(std::string_view key, size_t h) const {
  if (capacity_ == 0) return capacity_;
  const size_t mask = capacity_ - 1;
  const uint8_t tag = Tag(h);
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const uint8_t c = ctrl_[i];
    if (c == kEmpty) return capacity_;
    if (c == tag && slots_[i]->key() == key) return i;
  }
}

Object* ObjectIndex::Find(std::string_view key) const { return Find(key, Hash(key)); }

Object* ObjectIndex::Find(std::string_view key, size_t hash) const {
  size_t i = FindSlot(key, hash);
  return i == capacity_ ? nullptr : slots_[i];
}

void ObjectIndex::Insert(Object* obj) {
  const size_t h = Hash(obj->key());
  assert(FindSlot(obj->key(), h) == capacity_);
  if (capacity_ == 0 || OverLoad(size_ + tombstones_ + 1, capacity_)) {
    // Double when live objects fill more than 25/32 of the slots (the load then falls to about
    // 7/16 and climbs back to 7/8 before the next doubling); otherwise tombstones are what fills
    // the table, and a rebuild at the same size sheds them (and leaves room for at least 3/32 of
    // the slots in inserts before the next rebuild: amortised O(1)).
    size_t capacity = capacity_ == 0 ? kMinCapacity : capacity_;
    if (capacity_ != 0 && (size_ + 1) * 32 > capacity_ * 25) capacity *= 2;
    try {
      Rebuild(capacity);
    } catch (...) {
      ObjectDeleter()(obj);
      throw;
    }
  }
  const size_t mask = capacity_ - 1;
  size_t i = h & mask;
  while (IsFull(ctrl_[i])) i = (i + 1) & mask;
  if (ctrl_[i] == kDeleted) --tombstones_;
  ctrl_[i] = Tag(h);
  slots_[i] = obj;
  ++size_;
}

void ObjectIndex::Erase(Object* obj) {
  size_t i = FindSlot(obj->key(), Hash(obj->key()));
  assert(i != capacity_ && slots_[i] == obj);
  EraseSlot(i);
}

void ObjectIndex::EraseSlot(size_t i) {
  ObjectDeleter()(slots_[i]);
  slots_[i] = nullptr;
  // A slot followed by an empty one ends every probe sequence through it: it can be empty again
  // instead of a tombstone.
  if (ctrl_[(i + 1) & (capacity_ - 1)] == kEmpty) {
    ctrl_[i] = kEmpty;
  } else {
    ctrl_[i] = kDeleted;
    ++tombstones_;
  }
  --size_;
}

void ObjectIndex::Rebuild(size_t capacity) {
  std::unique_ptr<Object*[]> slots(new Object*[capacity]());
  std::unique_ptr<uint8_t[]> ctrl(new uint8_t[capacity]);
  std::memset(ctrl.get(), kEmpty, capacity);
  const size_t mask = capacity - 1;
  for (size_t i = 0; i < capacity_; ++i) {
    if (!IsFull(ctrl_[i])) continue;
    const size_t h = Hash(slots_[i]->key());
    size_t j = h & mask;
    while (ctrl[j] != kEmpty) j = (j + 1) & mask;
    ctrl[j] = Tag(h);
    slots[j] = slots_[i];
  }
  slots_ = std::move(slots);
  ctrl_ = std::move(ctrl);
  capacity_ = capacity;
  tombstones_ = 0;
  ++rebuilds_;
}

}  // namespace kvpool::master
