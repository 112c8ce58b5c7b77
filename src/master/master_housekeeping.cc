// MasterCore's periodic work: client liveness, stale reservations, deferred frees and
// watermark eviction.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "master/master_core.h"

namespace kvpool::master {
namespace {

template <typename T>
bool Contains(const std::vector<T>& v, T x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// After a watermark round that fell short (little is evictable: leases, pins, pending puts),
// wait this long before scanning the table again.
constexpr int64_t kWatermarkBackoffNs = 1'000'000'000;

}  // namespace

HousekeepingReport MasterCore::Housekeeping(TimePoint now) {
  std::lock_guard serial(housekeeping_mu_);
  const int64_t now_ns = ToNanos(now);
  HousekeepingReport report;
  report.dead_clients = ExpireClients(now, &report);
  report.leases_expired = EndLeases(leases_.TakeExpired(now_ns));
  for (size_t i = 0; i < ObjectTable::kShards; ++i) {
    report.soft_pins_expired += table_.LockIndex(i)->ExpireSoftPins(now_ns);
  }
  report.reservations_reclaimed = ReclaimStaleReservations(now_ns);
  report.deferred_frees = registry_.ReleaseDue(now_ns);
  report.deferred_frees += ExpirePromotions(now_ns);
  report.evicted = WatermarkEviction(now_ns);
  return report;
}

size_t MasterCore::DropReplicasAndWriters(const std::vector<uint64_t>& segments,
                                          const std::vector<uint32_t>& writers, int64_t now_ns) {
  if (segments.empty() && writers.empty()) return 0;
  size_t removed = 0;
  for (size_t i = 0; i < ObjectTable::kShards; ++i) {
    auto shard = table_.LockIndex(i);
    removed += shard->EraseIf([&](Object& o) {
      if (o.pending() && Contains(writers, o.writer)) {
        FreeUnfinishedPut(o, now_ns);  // replicas on unmounted segments are ignored by Free
        return true;
      }
      // Only a medium the object no longer has anywhere is reported gone.
      const bool had_dram = HasTier(o.replicas(), kTierDram);
      const bool had_disk = HasTier(o.replicas(), kTierDisk);
      o.DropReplicasIf([&](const ReplicaRef& r) { return Contains(segments, r.segment_id); });
      RecordRemoved(events_, o.key(), had_dram && !HasTier(o.replicas(), kTierDram),
                    had_disk && !HasTier(o.replicas(), kTierDisk), KvRemoval::kDropped);
      return o.replicas().empty();
    });
  }
  return removed;
}

size_t MasterCore::ExpireClients(TimePoint now, HousekeepingReport* report) {
  auto dead = clients_.ExpireDead(now, options_.client_ttl);
  if (dead.empty()) return 0;
  std::vector<uint64_t> segments;
  std::vector<uint32_t> writers;
  for (const auto& c : dead) {
    auto ids = registry_.UnmountOwnedBy(c.handle);
    spdlog::warn("client={} expired after {} s of silence: segments_unmounted={}", c.client_id,
                 options_.client_ttl.count(), ids.size());
    segments.insert(segments.end(), ids.begin(), ids.end());
    writers.push_back(c.handle);
  }
  // A dead reader's transfers are over: its leases end now, not at their TTL.
  report->leases_of_dead_clients += EndLeases(leases_.TakeClients(writers));
  report->segments_unmounted += segments.size();
  report->objects_dropped += DropReplicasAndWriters(segments, writers, ToNanos(now));
  return dead.size();
}

size_t MasterCore::ReclaimStaleReservations(int64_t now_ns) {
  size_t reclaimed = 0;
  for (size_t i = 0; i < ObjectTable::kShards; ++i) {
    auto shard = table_.LockIndex(i);
    std::vector<Object*> stale;
    for (Object* o : shard->pending()) {
      if (now_ns - o->put_start_ns() >= release_ns_) stale.push_back(o);
    }
    for (Object* o : stale) {
      spdlog::warn("key={} pending put reclaimed after {} s without put end", o->key(),
                   options_.put_start_release_timeout_sec.count());
      FreeReplicas(*o);
      shard->Erase(o);
    }
    reclaimed += stale.size();
  }
  return reclaimed;
}

EvictionResult MasterCore::WatermarkEviction(int64_t now_ns) {
  EvictionResult total;
  const double hw = options_.eviction_high_watermark_ratio;
  const double ratio = options_.eviction_ratio;
  if (ratio <= 0.0 || now_ns < watermark_backoff_until_ns_) return total;
  bool short_of_target = false;
  auto run = [&](uint64_t capacity, std::optional<uint64_t> segment) {
    auto target = static_cast<uint64_t>(ratio * static_cast<double>(capacity));
    if (target == 0) return;
    // Background work: objects touched within eviction_min_age are left for a put that needs
    // their room (write-then-read engines read what they just wrote).
    EvictionResult r = evictor_.Evict(
        target, segment, now_ns, std::nullopt,
        std::chrono::duration_cast<std::chrono::nanoseconds>(options_.eviction_min_age).count(),
        /*young_too=*/false, KvRemoval::kEvictedWatermark);
    total.objects += r.objects;
    total.bytes += r.bytes;
    if (r.bytes < target) short_of_target = true;
  };
  PoolUsage pool = registry_.Usage();
  if (pool.capacity > 0 &&
      static_cast<double>(pool.used) > hw * static_cast<double>(pool.capacity)) {
    run(pool.capacity, std::nullopt);
  }
  for (const SegmentStats& s : registry_.Stats()) {
    if (s.tier != kTierDram) continue;  // a disk tier's host evicts there itself
    if (static_cast<double>(s.used) > hw * static_cast<double>(s.capacity)) {
      run(s.capacity, s.id);
    }
  }
  if (short_of_target) watermark_backoff_until_ns_ = now_ns + kWatermarkBackoffNs;
  return total;
}

}  // namespace kvpool::master
