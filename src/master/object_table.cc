#include "master/object_table.h"

#include <cassert>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <utility>

#include "common/tenant_key.h"

namespace kvpool::master {

ObjectPtr Object::Create(std::string_view key, uint64_t size,
                         std::span<const ReplicaRef> replicas) {
  assert(!key.empty() && key.size() <= UINT16_MAX && replicas.size() <= kMaxReplicas);
  size_t bytes = sizeof(Object) + replicas.size() * sizeof(ReplicaRef) + key.size();
  void* mem = ::operator new(bytes);
  auto* o = new (mem) Object();
  o->size = size;
  o->key_len_ = static_cast<uint16_t>(key.size());
  o->replica_count_ = static_cast<uint8_t>(replicas.size());
  o->replica_capacity_ = static_cast<uint8_t>(replicas.size());
  ReplicaRef* slots = o->slots();
  for (size_t i = 0; i < replicas.size(); ++i) new (slots + i) ReplicaRef(replicas[i]);
  std::memcpy(slots + replicas.size(), key.data(), key.size());
  return ObjectPtr(o);
}

void ObjectDeleter::operator()(Object* o) const {
  o->~Object();  // ReplicaRef and the key bytes are trivially destructible
  ::operator delete(o);
}

size_t Object::DropReplicasIf(const std::function<bool(const ReplicaRef&)>& drop) {
  ReplicaRef* s = slots();
  uint8_t kept = 0;
  for (uint8_t i = 0; i < replica_count_; ++i) {
    if (!drop(s[i])) s[kept++] = s[i];
  }
  size_t dropped = replica_count_ - kept;
  replica_count_ = kept;
  return dropped;
}

Object* ObjectTable::Shard::Find(std::string_view key) const { return objects_.Find(key); }

Object* ObjectTable::Shard::Insert(ObjectPtr obj) {
  Object* raw = obj.release();
  objects_.Insert(raw);  // owns it now (destroys it if growing throws)
  if (raw->pending()) pending_.insert(raw);
  total_->fetch_add(1, std::memory_order_relaxed);
  ledger_->Add(TenantOf(raw->key()), static_cast<int64_t>(ObjectTable::TenantBytes(*raw)), 1);
  return raw;
}

void ObjectTable::Shard::Erase(Object* obj) {
  pending_.erase(obj);
  Forget(*obj);
  ledger_->Add(TenantOf(obj->key()), -static_cast<int64_t>(ObjectTable::TenantBytes(*obj)), -1);
  objects_.Erase(obj);
  total_->fetch_sub(1, std::memory_order_relaxed);
}

void ObjectTable::Shard::MarkComplete(Object* obj) {
  assert(obj->pending());
  obj->state = ObjectState::kComplete;
  obj->stamp_ns = 0;  // no lease yet
  pending_.erase(obj);
}

void ObjectTable::Shard::Forget(const Object& o) {
  if (o.held) holds_.erase(&o);
  if ((o.flags & kSoftPinExpires) != 0) soft_pin_until_.erase(&o);
  if ((o.flags & kGrouped) != 0) groups_->Leave(o.key());
}

void ObjectTable::Shard::SetSoftPinExpiry(Object* obj, int64_t until_ns) {
  obj->flags |= kSoftPinExpires;
  soft_pin_until_[obj] = until_ns;
}

int64_t ObjectTable::Shard::SoftPinUntil(const Object* obj) const {
  auto it = soft_pin_until_.find(obj);
  return it == soft_pin_until_.end() ? 0 : it->second;
}

size_t ObjectTable::Shard::ExpireSoftPins(int64_t now_ns) {
  size_t n = 0;
  for (auto it = soft_pin_until_.begin(); it != soft_pin_until_.end();) {
    if (it->second > now_ns) {
      ++it;
      continue;
    }
    auto* obj = const_cast<Object*>(it->first);
    obj->flags &= static_cast<uint8_t>(~(kSoftPin | kSoftPinExpires));
    it = soft_pin_until_.erase(it);
    ++n;
  }
  return n;
}

ObjectTable::Shard::HoldToken ObjectTable::Shard::Hold(Object* obj, int64_t until_ns) {
  assert(!obj->pending());
  HoldEntry& e = holds_[obj];
  if (e.readers == 0) e.generation = next_generation_++;
  ++e.readers;
  obj->held = true;
  obj->stamp_ns = std::max(obj->stamp_ns, until_ns);
  return HoldToken{obj, e.generation};
}

bool ObjectTable::Shard::Unhold(const HoldToken& token) {
  auto it = holds_.find(token.obj);
  if (it == holds_.end() || it->second.generation != token.generation) return false;
  if (--it->second.readers > 0) return false;
  // The object is alive (an erase would have dropped the entry): the last reader is done.
  auto* obj = const_cast<Object*>(it->first);
  holds_.erase(it);
  obj->held = false;
  obj->stamp_ns = 0;
  return true;
}

size_t ObjectTable::Shard::EraseIf(const std::function<bool(Object&)>& f) {
  // Per-tenant deltas, applied once at the end (one ledger lock per call, not per object).
  std::map<std::string, std::pair<int64_t, int64_t>, std::less<>> deltas;
  auto account = [&deltas](std::string_view tenant, int64_t bytes, int64_t objects) {
    if (bytes == 0 && objects == 0) return;
    auto d = deltas.find(tenant);
    if (d == deltas.end()) d = deltas.emplace(std::string(tenant), std::pair{0, 0}).first;
    d->second.first += bytes;
    d->second.second += objects;
  };
  size_t erased = objects_.EraseIf([&](Object& o) {
    const auto before = static_cast<int64_t>(ObjectTable::TenantBytes(o));
    if (!f(o)) {
      account(TenantOf(o.key()), static_cast<int64_t>(ObjectTable::TenantBytes(o)) - before, 0);
      return false;
    }
    account(TenantOf(o.key()), -before, -1);
    pending_.erase(&o);
    Forget(o);
    return true;
  });
  for (const auto& [tenant, d] : deltas) ledger_->Add(tenant, d.first, d.second);
  total_->fetch_sub(erased, std::memory_order_relaxed);
  return erased;
}

ObjectTable::ObjectTable() : shards_(new Slot[kShards]) {
  for (size_t i = 0; i < kShards; ++i) {
    shards_[i].shard.total_ = &total_;
    shards_[i].shard.ledger_ = &ledger_;
    shards_[i].shard.groups_ = &groups_;
  }
}

size_t ObjectTable::ShardOfHash(size_t hash) {
  // High bits of a multiplicative mix: independent of the bucket index inside the shard.
  uint64_t h = static_cast<uint64_t>(hash) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h >> 58);  // 64 shards
}
static_assert(ObjectTable::kShards == 64, "ShardOfHash takes the top 6 bits");

}  // namespace kvpool::master
