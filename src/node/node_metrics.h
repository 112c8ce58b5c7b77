// The node's metrics: requests of standalone clients over the local socket (per method: count,
// latency, errors by code) recorded by the attach server, and the Prometheus text of everything
// a node operator watches: its segment, its TCP data service, its attached clients and the
// copying fallback. Every metric is listed with its meaning in docs/operations.md.
//
// Threading: thread-safe (relaxed atomics; Render reads a racing update partly or not at all).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/metrics.h"
#include "hosting/disk_host.h"
#include "kvpool/status.h"
#include "rpc/kvpool.pb.h"
#include "transfer/data_service.h"

namespace kvpool::node {

// What the node is at scrape time (read from its parts by NodeAdmin).
struct NodeGauges {
  std::string segment_name;
  uint64_t segment_bytes = 0;
  bool master_reachable = false;
  double start_unix_seconds = 0;
  rpc::NodeStatusReply attach;  // standalone sessions, regions, copy counters
  const transfer::DataServiceCounters* data = nullptr;  // the TCP data service (null: none)
  std::optional<hosting::DiskHostStats> disk;           // the disk tier (none: no tier)
};

class NodeMetrics {
 public:
  // One request of a standalone client: its method (rpc::Method), outcome and duration.
  void RecordLocal(uint16_t method, ErrorCode code, uint64_t nanos);

  // Prometheus text of the local request metrics and `gauges`.
  std::string Render(const NodeGauges& gauges) const;

  // For tests.
  uint64_t local_requests(uint16_t method) const;
  uint64_t local_errors(uint16_t method, ErrorCode code) const;

 private:
  // Methods ATTACH (60) .. NODE_STATUS (73) each have a slot; anything else counts as "other".
  static constexpr uint16_t kFirstMethod = 60;
  static constexpr size_t kMethods = 15;  // 14 methods + other
  struct PerMethod {
    metrics::Counter requests;
    metrics::LatencyHistogram latency;
    metrics::ErrorCounts errors;
  };
  static size_t SlotOf(uint16_t method);

  std::array<PerMethod, kMethods> methods_;
};

}  // namespace kvpool::node
