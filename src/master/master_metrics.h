// The master's request metrics: per RPC method, requests, keys, keys found, latency and errors by
// code; plus the totals of housekeeping. Updated on the RPC threads with relaxed atomics (a few
// adds per request plus one pass over the reply's per-key codes, which the reply already costs).
//
// Render() writes them, together with the gauges of a StatReply, as Prometheus text. Every
// metric is listed with its meaning in docs/operations.md.
//
// Threading: thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics.h"
#include "kvpool/status.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::master {

// The methods counted separately; anything else the master is sent counts as kOther.
enum class MetricMethod : uint8_t {
  kPing,
  kMountSegment,
  kUnmountSegment,
  kPutStart,
  kPutEnd,
  kGetReplicaList,
  kExists,
  kExistsPrefix,
  kRemove,
  kRemoveAll,
  kStat,
  kLeaseRelease,
  kOther,
};
inline constexpr size_t kMetricMethods = static_cast<size_t>(MetricMethod::kOther) + 1;

MetricMethod MetricMethodOf(uint16_t rpc_method);
// The `method` label: "put_start", "get_replica_list", … ("other" for kOther).
std::string_view MetricMethodName(MetricMethod m);

// Totals of what housekeeping did (see HousekeepingReport).
struct HousekeepingTotals {
  metrics::Counter clients_expired;
  metrics::Counter segments_unmounted;
  metrics::Counter objects_dropped;
  metrics::Counter reservations_reclaimed;
  metrics::Counter watermark_evicted_objects;
};

class MasterCore;

// One tenant's use at scrape time ("default" for the default tenant).
struct TenantGauge {
  std::string tenant;
  uint64_t used_bytes = 0;  // replica bytes (size x replicas), pending puts included
  uint64_t objects = 0;
  std::optional<uint64_t> quota_bytes;  // --tenant_quota, if any
};

// Every tenant that has held objects or has a quota, by tenant id.
std::vector<TenantGauge> TenantGauges(const MasterCore& core);

// The pool's state at scrape time, read from MasterCore.
struct PoolGauges {
  rpc::StatReply stat;               // segments, totals, clients, evicted objects, epoch
  uint64_t evicted_bytes_total = 0;  // MasterCore::evicted_bytes_total()
  uint64_t demoted_total = 0;        // MasterCore::demoted_total()
  uint64_t promoted_total = 0;       // MasterCore::promoted_total()
  uint64_t pending_objects = 0;      // puts started and not yet ended
  double start_unix_seconds = 0;     // when the master started
  std::vector<TenantGauge> tenants;  // TenantGauges()
};

class MasterMetrics {
 public:
  // Accounts one request; Finish() (or the destructor) records its latency.
  class Call {
   public:
    Call(MasterMetrics* m, MetricMethod method);
    ~Call() { Finish(); }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

    void Keys(uint64_t n);   // keys (or items) in the request
    void Found(uint64_t n);  // keys found: located, existing, or in the existing prefix
    void Error(ErrorCode code);
    // Per-key outcomes of a reply.
    void Outcomes(const rpc::PutStartReply& r);
    void Outcomes(const rpc::CodesReply& r);
    void Outcomes(const rpc::GetReplicaListReply& r);
    void Outcomes(const rpc::ExistsPrefixReply& r);
    void Finish();

   private:
    MasterMetrics* m_;
    MetricMethod method_;
    std::chrono::steady_clock::time_point start_;
    bool done_ = false;
  };

  HousekeepingTotals& housekeeping() { return housekeeping_; }
  // PUT_END keys answered RPC_TIMEOUT: no replica's host recorded the commit in time
  // (--commit_ack_timeout_ms). Counted as PUT_END errors too (the call's own accounting saw
  // them succeed).
  void CommitsUnacked(uint64_t n) {
    commits_unacked_.Add(n);
    for (uint64_t i = 0; i < n; ++i) {
      Of(MetricMethod::kPutEnd).errors.Add(static_cast<int32_t>(ErrorCode::RPC_TIMEOUT));
    }
  }
  uint64_t commits_unacked() const { return commits_unacked_.value(); }
  // PUT_END keys whose writer said a host listed them as their bytes arrived
  // (rpc::PutEnd.recorded_by_host, a pool component's): their commits wait for no journal ack.
  void CommitsListedOnWrite(uint64_t n) { commits_listed_on_write_.Add(n); }
  uint64_t commits_listed_on_write() const { return commits_listed_on_write_.value(); }
  // Segments whose host had not dropped what an upsert or a remove freed there when its reply
  // went out, --commit_ack_timeout_ms after it (a host cut off from the master).
  void FreesUnacked(uint64_t n) { frees_unacked_.Add(n); }
  uint64_t frees_unacked() const { return frees_unacked_.value(); }

  // Prometheus text: the request metrics, housekeeping totals and `pool`'s gauges.
  std::string Render(const PoolGauges& pool) const;

  // For tests and `kvpool top`-style readers.
  uint64_t requests(MetricMethod m) const { return Of(m).requests.value(); }
  uint64_t keys(MetricMethod m) const { return Of(m).keys.value(); }
  uint64_t found(MetricMethod m) const { return Of(m).found.value(); }
  uint64_t errors(MetricMethod m, ErrorCode code) const;

 private:
  struct PerMethod {
    metrics::Counter requests;
    metrics::Counter keys;
    metrics::Counter found;
    metrics::LatencyHistogram latency;
    metrics::ErrorCounts errors;
  };
  PerMethod& Of(MetricMethod m) { return methods_[static_cast<size_t>(m)]; }
  const PerMethod& Of(MetricMethod m) const { return methods_[static_cast<size_t>(m)]; }
  void RenderRequests(metrics::TextWriter& w) const;
  void RenderPool(metrics::TextWriter& w, const PoolGauges& pool) const;
  void RenderTenants(metrics::TextWriter& w, const PoolGauges& pool) const;

  std::array<PerMethod, kMetricMethods> methods_;
  metrics::Counter put_reserved_bytes_;       // bytes of put_start items given space
  metrics::Counter put_already_exists_;       // put_start items that needed no write
  metrics::Counter get_located_bytes_;        // bytes of objects get_replica_list located
  metrics::Counter commits_unacked_;          // see CommitsUnacked
  metrics::Counter commits_listed_on_write_;  // see CommitsListedOnWrite
  metrics::Counter frees_unacked_;            // see FreesUnacked
  HousekeepingTotals housekeeping_;
};

}  // namespace kvpool::master
