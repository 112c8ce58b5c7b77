#include "master/eviction.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "common/tenant_key.h"

namespace kvpool::master {
namespace {

bool HasReplicaOn(const Object& o, uint64_t segment) {
  for (const ReplicaRef& r : o.replicas()) {
    if (r.segment_id == segment) return true;
  }
  return false;
}

}  // namespace

uint64_t Evictor::CountedBytes(const Object& o, const Pass& pass) const {
  if (pass.tenant) return ObjectTable::TenantBytes(o);
  uint64_t per_replica = registry_->Reserved(o.size);
  if (pass.segment) return HasReplicaOn(o, *pass.segment) ? per_replica : 0;
  uint64_t dram = 0;
  for (const ReplicaRef& r : o.replicas()) dram += r.tier == kTierDram ? 1 : 0;
  return per_replica * dram;
}

ObjectPtr WithReplicas(const Object& o, std::span<const ReplicaRef> replicas) {
  ObjectPtr c = Object::Create(o.key(), o.size, replicas);
  c->checksum = o.checksum;
  c->stamp_ns = o.stamp_ns;
  c->set_last_access_ns(o.last_access_ns());
  c->writer = o.writer;
  c->state = o.state;
  uint8_t flags = o.flags & (kSoftPin | kHardPin | kAsked);
  if ((o.flags & kSoftPinExpires) != 0) flags &= static_cast<uint8_t>(~kSoftPin);
  c->flags = flags;
  return c;
}

bool Evictor::EvictObject(ObjectTable::Shard& shard, Object* o, KvRemoval why) {
  RecordRemoved(events_, o->key(), /*dram=*/true, /*disk=*/false, why);
  if (!HasTier(o->replicas(), kTierDisk)) {
    for (const ReplicaRef& rep : o->replicas()) registry_->Free(rep, o->size);
    shard.Erase(o);
    return true;
  }
  // Demoted: the DRAM copies go, the disk tier's copy keeps the object readable. Erase and
  // Insert keep the tenant ledger right; the object leaves its group (Erase forgets it) and an
  // expiring soft pin lapses now.
  std::array<ReplicaRef, kMaxReplicas> kept;
  size_t n = 0;
  for (const ReplicaRef& rep : o->replicas()) {
    if (rep.tier == kTierDram) {
      registry_->Free(rep, o->size);
    } else {
      kept[n++] = rep;
    }
  }
  ObjectPtr d = WithReplicas(*o, std::span<const ReplicaRef>(kept.data(), n));
  d->stamp_ns = 0;  // not leased (candidates never are)
  shard.Erase(o);
  shard.Insert(std::move(d));
  demoted_total_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool Evictor::IsCandidate(const Object& o, const Pass& pass) const {
  if (o.pending() || o.hard_pinned() || o.leased(pass.now_ns)) return false;
  if (o.soft_pinned() != pass.soft_pinned) return false;
  if (pass.asked && o.asked() != *pass.asked) return false;
  if (o.last_access_ns() > pass.idle_at_most_ns) return false;
  if (pass.tenant && TenantOf(o.key()) != *pass.tenant) return false;
  // Only on a disk tier: that tier's host evicts it, never the master.
  if (!HasTier(o.replicas(), kTierDram)) return false;
  if (pass.on_disk && HasTier(o.replicas(), kTierDisk) != *pass.on_disk) return false;
  if (pass.segment && !HasReplicaOn(o, *pass.segment)) return false;
  if (OffloadPending(o, pass)) {
    ++offload_pending_;
    return false;
  }
  return true;
}

bool Evictor::OffloadPending(const Object& o, const Pass& pass) const {
  if (pass.disk_backed == nullptr || o.last_access_ns() <= pass.offload_after_ns) return false;
  if (HasTier(o.replicas(), kTierDisk)) return false;
  for (const ReplicaRef& rep : o.replicas()) {
    if (std::binary_search(pass.disk_backed->begin(), pass.disk_backed->end(), rep.segment_id)) {
      return true;
    }
  }
  return false;
}

int64_t Evictor::EstimateCutoff(const Pass& pass, uint64_t target) {
  struct Weighted {
    int64_t access;
    double bytes;  // the sample's bytes scaled to stand for its shard's unsampled candidates
  };
  std::vector<Weighted> all;
  std::minstd_rand rng(0x6b76);  // fixed seed: reproducible rounds
  std::vector<std::pair<int64_t, uint64_t>> reservoir;
  for (size_t i = 0; i < ObjectTable::kShards; ++i) {
    reservoir.clear();
    uint64_t seen = 0;
    double shard_bytes = 0;
    {
      auto shard = table_->LockIndex(i);
      shard->ForEach([&](const Object& o) {
        if (!IsCandidate(o, pass)) return;
        uint64_t b = CountedBytes(o, pass);
        shard_bytes += static_cast<double>(b);
        ++seen;
        if (reservoir.size() < kSamplesPerShard) {
          reservoir.emplace_back(o.last_access_ns(), b);
          return;
        }
        uint64_t j = std::uniform_int_distribution<uint64_t>(0, seen - 1)(rng);
        if (j < kSamplesPerShard) reservoir[j] = {o.last_access_ns(), b};
      });
    }
    double sampled = 0;
    for (const auto& [access, b] : reservoir) sampled += static_cast<double>(b);
    if (sampled == 0) continue;
    for (const auto& [access, b] : reservoir) {
      all.push_back(Weighted{access, static_cast<double>(b) * shard_bytes / sampled});
    }
  }
  std::sort(all.begin(), all.end(),
            [](const Weighted& a, const Weighted& b) { return a.access < b.access; });
  double acc = 0;
  for (const Weighted& w : all) {
    acc += w.bytes;
    if (acc >= static_cast<double>(target)) return w.access;
  }
  return std::numeric_limits<int64_t>::max();
}

EvictionResult Evictor::EvictFromShard(ObjectTable::Shard& shard, uint64_t quota, int64_t cutoff,
                                       const Pass& pass, std::vector<std::string>* groups) {
  using Candidate = std::pair<int64_t, Object*>;  // (last_access, object)
  std::vector<Candidate> heap;
  shard.ForEach([&](Object& o) {
    if (o.last_access_ns() <= cutoff && IsCandidate(o, pass))
      heap.emplace_back(o.last_access_ns(), &o);
  });
  // A min-heap on last_access: O(n) to build, O(log n) per evicted object.
  auto newer = [](const Candidate& a, const Candidate& b) { return a.first > b.first; };
  std::make_heap(heap.begin(), heap.end(), newer);
  EvictionResult r;
  while (r.bytes < quota && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), newer);
    Object* o = heap.back().second;
    heap.pop_back();
    r.bytes += CountedBytes(*o, pass);
    SPDLOG_DEBUG("evicted key={} size={}", o->key(), o->size);
    if ((o->flags & kGrouped) != 0) groups->push_back(table_->groups().GroupOf(o->key()));
    EvictObject(shard, o, pass.why);
    ++r.objects;
  }
  return r;
}

EvictionResult Evictor::EvictGroups(std::vector<std::string>* groups, const Pass& pass) {
  EvictionResult r;
  std::sort(groups->begin(), groups->end());
  groups->erase(std::unique(groups->begin(), groups->end()), groups->end());
  for (const std::string& g : *groups) {
    if (g.empty()) continue;
    for (const std::string& key : table_->groups().Take(g)) {
      auto shard = table_->Lock(key);
      Object* o = shard->Find(key);
      if (o == nullptr) continue;
      o->flags &= static_cast<uint8_t>(~kGrouped);  // Take dissolved the group
      // A member a reader holds right now (its lease was taken before the group's peers were
      // held) stays until its lease ends, as any leased object.
      if (o->pending() || o->hard_pinned() || o->leased(pass.now_ns)) continue;
      if (!HasTier(o->replicas(), kTierDram)) continue;  // demoted already: the disk's
      r.bytes += CountedBytes(*o, pass);
      SPDLOG_DEBUG("evicted key={} size={} (its group)", o->key(), o->size);
      EvictObject(*shard, o, pass.why);
      ++r.objects;
    }
  }
  groups->clear();
  return r;
}

EvictionResult Evictor::EvictRound(const Pass& pass, uint64_t target, int64_t cutoff, bool share,
                                   std::vector<std::string>* groups) {
  EvictionResult round;
  for (size_t i = 0; i < ObjectTable::kShards && round.bytes < target; ++i) {
    uint64_t remaining = target - round.bytes;
    size_t shards_left = ObjectTable::kShards - i;
    uint64_t quota = share ? remaining / shards_left + (remaining % shards_left != 0) : remaining;
    auto shard = table_->LockIndex(i);
    EvictionResult r = EvictFromShard(*shard, quota, cutoff, pass, groups);
    round.objects += r.objects;
    round.bytes += r.bytes;
  }
  return round;
}

EvictionResult Evictor::EvictClass(const Pass& pass, uint64_t target) {
  EvictionResult total;
  auto add = [&total](const EvictionResult& r) {
    total.objects += r.objects;
    total.bytes += r.bytes;
    return r.objects;
  };
  std::vector<std::string> groups;
  int64_t cutoff = EstimateCutoff(pass, target);
  add(EvictRound(pass, target, cutoff, /*share=*/false, &groups));
  add(EvictGroups(&groups, pass));
  // Sampling fell short: shared rounds while they make progress.
  while (total.bytes < target) {
    uint64_t n = add(EvictRound(pass, target - total.bytes, std::numeric_limits<int64_t>::max(),
                                /*share=*/true, &groups));
    n += add(EvictGroups(&groups, pass));
    if (n == 0) break;
  }
  return total;
}

EvictionResult Evictor::Evict(uint64_t target_bytes, std::optional<uint64_t> segment,
                              int64_t now_ns, std::optional<std::string_view> tenant,
                              int64_t min_idle_ns, bool young_too, KvRemoval why) {
  std::lock_guard serial(mu_);
  EvictionResult total;
  const int64_t idle_cutoff =
      min_idle_ns > 0 ? now_ns - min_idle_ns : std::numeric_limits<int64_t>::max();
  struct Class {
    std::optional<bool> asked;
    int64_t idle_at_most_ns;
  };
  std::vector<Class> classes = {{false, idle_cutoff}, {true, idle_cutoff}};
  if (min_idle_ns > 0 && young_too) {
    classes.push_back({std::nullopt, std::numeric_limits<int64_t>::max()});
  }
  // Demotions first where a disk tier could have the object: {true} then everyone (but those
  // whose copy to disk is pending).
  std::vector<std::optional<bool>> disk_first = {std::nullopt};
  std::vector<uint64_t> disk_backed;
  if (!tenant && registry_->AnyDiskTier()) {
    disk_first.insert(disk_first.begin(), true);
    if (offload_wait_ns_ > 0) disk_backed = registry_->DramSegmentsWithDiskTier();
  }
  offload_pending_ = 0;
  for (bool soft : {false, true}) {
    for (const std::optional<bool>& on_disk : disk_first) {
      for (const Class& c : classes) {
        if (total.bytes >= target_bytes) break;
        Pass pass{soft, segment, now_ns, tenant, c.asked, c.idle_at_most_ns, on_disk};
        pass.why = why;
        if (!disk_backed.empty()) {
          pass.offload_after_ns = now_ns - offload_wait_ns_;
          pass.disk_backed = &disk_backed;
        }
        EvictionResult r = EvictClass(pass, target_bytes - total.bytes);
        total.objects += r.objects;
        total.bytes += r.bytes;
      }
    }
  }
  total.offload_pending = offload_pending_;
  evicted_total_.fetch_add(total.objects, std::memory_order_relaxed);
  evicted_bytes_total_.fetch_add(total.bytes, std::memory_order_relaxed);
  if (total.objects > 0) {
    spdlog::info("eviction freed bytes={} objects={} target={} segment={} tenant={}", total.bytes,
                 total.objects, target_bytes, segment ? std::to_string(*segment) : "all",
                 !tenant           ? "all"
                 : tenant->empty() ? "default"
                                   : std::string(*tenant));
  }
  return total;
}

}  // namespace kvpool::master
