#include "master/master_metrics.h"

#include <fmt/format.h>

#include <map>

#include "master/master_core.h"

namespace kvpool::master {
namespace {

constexpr std::array<std::string_view, kMetricMethods> kMethodNames = {
    "ping",   "mount_segment", "unmount_segment", "put_start",  "put_end", "get_replica_list",
    "exists", "exists_prefix", "remove",          "remove_all", "stat",    "lease_release",
    "other"};

}  // namespace

MetricMethod MetricMethodOf(uint16_t rpc_method) {
  switch (rpc_method) {
    case rpc::PING:
      return MetricMethod::kPing;
    case rpc::MOUNT_SEGMENT:
      return MetricMethod::kMountSegment;
    case rpc::UNMOUNT_SEGMENT:
      return MetricMethod::kUnmountSegment;
    case rpc::PUT_START:
      return MetricMethod::kPutStart;
    case rpc::PUT_END:
      return MetricMethod::kPutEnd;
    case rpc::GET_REPLICA_LIST:
      return MetricMethod::kGetReplicaList;
    case rpc::EXISTS:
      return MetricMethod::kExists;
    case rpc::EXISTS_PREFIX:
      return MetricMethod::kExistsPrefix;
    case rpc::REMOVE:
      return MetricMethod::kRemove;
    case rpc::REMOVE_ALL:
      return MetricMethod::kRemoveAll;
    case rpc::STAT:
      return MetricMethod::kStat;
    case rpc::LEASE_RELEASE:
      return MetricMethod::kLeaseRelease;
    default:
      return MetricMethod::kOther;
  }
}

std::string_view MetricMethodName(MetricMethod m) { return kMethodNames[static_cast<size_t>(m)]; }

uint64_t MasterMetrics::errors(MetricMethod m, ErrorCode code) const {
  return Of(m).errors.Count(static_cast<int32_t>(code));
}

MasterMetrics::Call::Call(MasterMetrics* m, MetricMethod method)
    : m_(m), method_(method), start_(std::chrono::steady_clock::now()) {
  m_->Of(method_).requests.Add();
}

void MasterMetrics::Call::Keys(uint64_t n) { m_->Of(method_).keys.Add(n); }
void MasterMetrics::Call::Found(uint64_t n) {
  if (n > 0) m_->Of(method_).found.Add(n);
}
void MasterMetrics::Call::Error(ErrorCode code) {
  if (code != ErrorCode::OK) m_->Of(method_).errors.Add(static_cast<int32_t>(code));
}

void MasterMetrics::Call::Outcomes(const rpc::PutStartReply& r) {
  uint64_t reserved = 0, existing = 0;
  for (const rpc::PutStartResult& res : r.results()) {
    if (res.code() != 0) {
      Error(ErrorCodeFromInt(res.code()));
    } else if (res.already_exists()) {
      ++existing;
    } else if (res.replicas_size() > 0) {
      reserved += res.replicas(0).length();
    }
  }
  if (reserved > 0) m_->put_reserved_bytes_.Add(reserved);
  if (existing > 0) m_->put_already_exists_.Add(existing);
}

void MasterMetrics::Call::Outcomes(const rpc::CodesReply& r) {
  uint64_t found = 0;
  for (int32_t code : r.codes()) {
    if (code < 0) {
      Error(ErrorCodeFromInt(code));
    } else if (code == 1) {
      ++found;  // EXISTS: present (other methods answer 0 for OK)
    }
  }
  Found(found);
}

void MasterMetrics::Call::Outcomes(const rpc::GetReplicaListReply& r) {
  uint64_t found = 0, bytes = 0;
  for (const rpc::ObjectLocation& loc : r.objects()) {
    if (loc.code() != 0) {
      Error(ErrorCodeFromInt(loc.code()));
    } else {
      ++found;
      bytes += loc.size();
    }
  }
  Found(found);
  if (bytes > 0) m_->get_located_bytes_.Add(bytes);
}

void MasterMetrics::Call::Outcomes(const rpc::ExistsPrefixReply& r) { Found(r.count()); }

void MasterMetrics::Call::Finish() {
  if (done_) return;
  done_ = true;
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                 start_)
                .count();
  m_->Of(method_).latency.ObserveNanos(static_cast<uint64_t>(ns > 0 ? ns : 0));
}

void MasterMetrics::RenderRequests(metrics::TextWriter& w) const {
  using metrics::Label;
  auto per_method = [&](std::string_view name, std::string_view help, auto value) {
    w.Family(name, "counter", help);
    for (size_t i = 0; i < kMetricMethods; ++i) {
      w.Sample(name, {Label{"method", kMethodNames[i]}}, value(methods_[i]));
    }
  };
  per_method("kvpool_master_requests_total", "Requests served, by RPC method.",
             [](const PerMethod& p) { return p.requests.value(); });
  per_method("kvpool_master_request_keys_total",
             "Keys (put_start: items) carried by requests, by RPC method.",
             [](const PerMethod& p) { return p.keys.value(); });
  per_method("kvpool_master_found_keys_total",
             "Keys found: located by get_replica_list, present for exists, in the existing "
             "prefix for exists_prefix.",
             [](const PerMethod& p) { return p.found.value(); });

  w.Family("kvpool_master_errors_total", "counter",
           "Errors by RPC method and code: refused requests plus per-key error codes.");
  for (size_t i = 0; i < kMetricMethods; ++i) {
    methods_[i].errors.ForEach([&](int32_t code, uint64_t count) {
      std::string name = ErrorCodeName(static_cast<ErrorCode>(code));
      w.Sample("kvpool_master_errors_total", {{"method", kMethodNames[i]}, {"code", name}}, count);
    });
  }

  w.Family("kvpool_master_request_duration_seconds", "histogram",
           "Time the master spent on one request (decode, work, encode), by RPC method.");
  for (size_t i = 0; i < kMetricMethods; ++i) {
    w.Histogram("kvpool_master_request_duration_seconds", {{"method", kMethodNames[i]}},
                methods_[i].latency.Take());
  }
  w.WriteCounter("kvpool_master_put_reserved_bytes_total",
                 "Bytes of objects put_start reserved space for (one replica each).",
                 put_reserved_bytes_.value());
  w.WriteCounter("kvpool_master_put_already_exists_total",
                 "put_start items that needed no write: the key was complete or being written.",
                 put_already_exists_.value());
  w.WriteCounter("kvpool_master_get_located_bytes_total",
                 "Bytes of objects get_replica_list located for readers.",
                 get_located_bytes_.value());
  w.WriteCounter("kvpool_master_commits_unacked_total",
                 "Committed keys whose put was answered RPC_TIMEOUT: no replica's host recorded "
                 "the commit within --commit_ack_timeout_ms (a host cut off from the master).",
                 commits_unacked_.value());
  w.WriteCounter("kvpool_master_commits_listed_on_write_total",
                 "Committed keys a host listed as their bytes arrived: their put waited for no "
                 "journal acknowledgement.",
                 commits_listed_on_write_.value());
  w.WriteCounter("kvpool_master_frees_unacked_total",
                 "Segments whose host had not dropped an upserted or removed object within "
                 "--commit_ack_timeout_ms when the call was answered (a host cut off from the "
                 "master): a master restart may bring that version back.",
                 frees_unacked_.value());
  const HousekeepingTotals& h = housekeeping_;
  w.WriteCounter("kvpool_master_clients_expired_total",
                 "Clients and nodes declared dead after --client_ttl of silence.",
                 h.clients_expired.value());
  w.WriteCounter("kvpool_master_segments_expired_total",
                 "Segments unmounted because their client or node expired.",
                 h.segments_unmounted.value());
  w.WriteCounter("kvpool_master_objects_dropped_total",
                 "Objects dropped because their last replica's segment left or their writer died.",
                 h.objects_dropped.value());
  w.WriteCounter("kvpool_master_reservations_reclaimed_total",
                 "Pending puts reclaimed after --put_start_release_timeout_sec without put end.",
                 h.reservations_reclaimed.value());
}

void MasterMetrics::RenderPool(metrics::TextWriter& w, const PoolGauges& pool) const {
  using metrics::Label;
  const rpc::StatReply& s = pool.stat;
  auto per_segment = [&](std::string_view name, std::string_view help, auto value) {
    w.Family(name, "gauge", help);
    for (const rpc::SegmentInfo& seg : s.segments()) {
      w.Sample(name, {Label{"segment", seg.segment_name()}}, static_cast<double>(value(seg)));
    }
  };
  per_segment("kvpool_master_segment_capacity_bytes", "Usable bytes of each mounted segment.",
              [](const rpc::SegmentInfo& g) { return g.size(); });
  per_segment("kvpool_master_segment_used_bytes",
              "Reserved bytes of each segment (complete, pending and awaiting a deferred free).",
              [](const rpc::SegmentInfo& g) { return g.used(); });
  per_segment("kvpool_master_segment_objects", "Replicas stored in each segment.",
              [](const rpc::SegmentInfo& g) { return g.object_count(); });
  per_segment("kvpool_master_segment_unreachable_reports",
              "Writers' reports that they could not reach the segment's host, since its mount "
              "(/segments names the last reporter).",
              [](const rpc::SegmentInfo& g) { return g.unreachable_reports(); });
  per_segment("kvpool_master_segment_suspect",
              "1 while a writer's report keeps new replicas off the segment (until its host "
              "pings).",
              [](const rpc::SegmentInfo& g) { return g.suspect() ? 1 : 0; });
  w.WriteGauge("kvpool_master_segments", "Mounted segments.",
               static_cast<double>(s.segments_size()));
  // Per tier (docs/operations.md, "Disk tier"): capacity and used above count DRAM only.
  w.Family("kvpool_master_tier_capacity_bytes", "gauge",
           "Usable bytes of the mounted segments of each tier (disk: the nodes' disk tiers).");
  w.Sample("kvpool_master_tier_capacity_bytes", {Label{"tier", "dram"}},
           static_cast<double>(s.capacity()));
  w.Sample("kvpool_master_tier_capacity_bytes", {Label{"tier", "disk"}},
           static_cast<double>(s.disk_capacity()));
  w.Family("kvpool_master_tier_used_bytes", "gauge", "Bytes holding replicas, per tier.");
  w.Sample("kvpool_master_tier_used_bytes", {Label{"tier", "dram"}}, static_cast<double>(s.used()));
  w.Sample("kvpool_master_tier_used_bytes", {Label{"tier", "disk"}},
           static_cast<double>(s.disk_used()));
  w.WriteGauge("kvpool_master_disk_replicas", "Replicas on the nodes' disk tiers.",
               static_cast<double>(s.disk_replicas()));
  w.WriteCounter("kvpool_master_demoted_objects_total",
                 "Objects evicted from DRAM that stayed readable on a disk tier.",
                 pool.demoted_total);
  w.WriteCounter("kvpool_master_promoted_objects_total",
                 "Objects on a disk tier given a DRAM replica again by their node (PROMOTE).",
                 pool.promoted_total);
  w.WriteGauge("kvpool_master_capacity_bytes", "Usable bytes of all mounted segments.",
               static_cast<double>(s.capacity()));
  w.WriteGauge("kvpool_master_used_bytes", "Reserved bytes of all mounted segments.",
               static_cast<double>(s.used()));
  w.WriteGauge("kvpool_master_objects", "Objects in the index (complete and pending).",
               static_cast<double>(s.object_count()));
  w.WriteGauge("kvpool_master_pending_objects", "Objects whose put has started and not ended.",
               static_cast<double>(pool.pending_objects));
  w.WriteGauge("kvpool_master_clients_alive", "Clients and nodes heard from within --client_ttl.",
               static_cast<double>(s.client_count()));
  w.WriteCounter("kvpool_master_evicted_objects_total", "Objects evicted to make room.",
                 s.evicted_total());
  w.WriteCounter("kvpool_master_evicted_bytes_total",
                 "Replica bytes freed by eviction (per-segment rounds count that segment's).",
                 pool.evicted_bytes_total);
  w.WriteCounter("kvpool_master_watermark_evicted_objects_total",
                 "Objects evicted by housekeeping because use passed the high watermark.",
                 housekeeping_.watermark_evicted_objects.value());
  w.WriteGauge("kvpool_master_leases_held", "Read leases held now (transfers in flight).",
               static_cast<double>(s.leases_held()));
  w.WriteGauge("kvpool_master_leased_bytes", "Bytes of the objects read leases hold now.",
               static_cast<double>(s.bytes_leased()));
  w.Family("kvpool_master_put_refused_total", "counter",
           "Put items refused for lack of room, by reason (leased_or_pinned: the pool is full "
           "and nothing evictable; tenant_quota; no_segment: none mounted, none accepting, or "
           "larger than every segment; offload_pending: full of objects not yet copied to their "
           "node's disk tier, the client asks again).");
  w.Sample("kvpool_master_put_refused_total", {Label{"reason", "leased_or_pinned"}},
           s.refused_leased_or_pinned());
  w.Sample("kvpool_master_put_refused_total", {Label{"reason", "tenant_quota"}},
           s.refused_tenant_quota());
  w.Sample("kvpool_master_put_refused_total", {Label{"reason", "no_segment"}},
           s.refused_no_segment());
  w.Sample("kvpool_master_put_refused_total", {Label{"reason", "offload_pending"}},
           s.refused_offload_pending());
  w.WriteGauge("kvpool_master_start_time_seconds", "When the master started, in Unix seconds.",
               pool.start_unix_seconds);
  w.Family("kvpool_master_info", "gauge", "Constant 1, labelled with the master's epoch.");
  w.Sample("kvpool_master_info", {{"epoch", fmt::format("{:016x}", s.master_epoch())}},
           uint64_t{1});
}

std::vector<TenantGauge> TenantGauges(const MasterCore& core) {
  std::map<std::string, TenantGauge, std::less<>> by_tenant;
  for (const auto& [tenant, usage] : core.TenantUsages()) {
    TenantGauge& g = by_tenant[tenant];
    g.used_bytes = usage.bytes;
    g.objects = usage.objects;
  }
  for (const auto& [tenant, quota] : core.options().tenant_quotas)
    by_tenant[tenant].quota_bytes = quota;
  std::vector<TenantGauge> out;
  out.reserve(by_tenant.size());
  for (auto& [tenant, g] : by_tenant) {
    g.tenant = tenant.empty() ? "default" : tenant;
    out.push_back(std::move(g));
  }
  return out;
}

void MasterMetrics::RenderTenants(metrics::TextWriter& w, const PoolGauges& pool) const {
  using metrics::Label;
  w.Family("kvpool_tenant_used_bytes", "gauge",
           "Replica bytes (size x replicas, puts in progress included) each tenant holds.");
  for (const TenantGauge& t : pool.tenants) {
    w.Sample("kvpool_tenant_used_bytes", {Label{"tenant", t.tenant}},
             static_cast<double>(t.used_bytes));
  }
  w.Family("kvpool_tenant_objects", "gauge", "Objects (complete and pending) of each tenant.");
  for (const TenantGauge& t : pool.tenants) {
    w.Sample("kvpool_tenant_objects", {Label{"tenant", t.tenant}}, static_cast<double>(t.objects));
  }
  w.Family("kvpool_tenant_quota_bytes", "gauge", "Each tenant's --tenant_quota, where it has one.");
  for (const TenantGauge& t : pool.tenants) {
    if (!t.quota_bytes) continue;
    w.Sample("kvpool_tenant_quota_bytes", {Label{"tenant", t.tenant}},
             static_cast<double>(*t.quota_bytes));
  }
}

std::string MasterMetrics::Render(const PoolGauges& pool) const {
  metrics::TextWriter w;
  RenderPool(w, pool);
  RenderTenants(w, pool);
  RenderRequests(w);
  return w.Take();
}

}  // namespace kvpool::master
