#include "node/node_metrics.h"

#include <fmt/format.h>

#include <string_view>

namespace kvpool::node {
namespace {

// The `method` label of each slot (method number - 60; the last is anything else).
constexpr std::array<std::string_view, 15> kLocalMethodNames = {"attach",
                                                                "join_session",
                                                                "register_region",
                                                                "unregister_region",
                                                                "heartbeat",
                                                                "put",
                                                                "get",
                                                                "exists",
                                                                "exists_prefix",
                                                                "get_size",
                                                                "remove",
                                                                "remove_all",
                                                                "stat",
                                                                "node_status",
                                                                "other"};

}  // namespace

size_t NodeMetrics::SlotOf(uint16_t method) {
  if (method < kFirstMethod || method >= kFirstMethod + kMethods - 1) return kMethods - 1;
  return method - kFirstMethod;
}

void NodeMetrics::RecordLocal(uint16_t method, ErrorCode code, uint64_t nanos) {
  PerMethod& m = methods_[SlotOf(method)];
  m.requests.Add();
  m.latency.ObserveNanos(nanos);
  if (code != ErrorCode::OK) m.errors.Add(static_cast<int32_t>(code));
}

uint64_t NodeMetrics::local_requests(uint16_t method) const {
  return methods_[SlotOf(method)].requests.value();
}

uint64_t NodeMetrics::local_errors(uint16_t method, ErrorCode code) const {
  return methods_[SlotOf(method)].errors.Count(static_cast<int32_t>(code));
}

std::string NodeMetrics::Render(const NodeGauges& g) const {
  metrics::TextWriter w;
  const metrics::Label seg{"segment", g.segment_name};
  w.Family("kvpool_node_info", "gauge", "Constant 1, labelled with the node's segment name.");
  w.Sample("kvpool_node_info", {seg}, uint64_t{1});
  w.WriteGauge("kvpool_node_start_time_seconds", "When the node started, in Unix seconds.",
               g.start_unix_seconds);
  w.WriteGauge("kvpool_node_segment_capacity_bytes", "Bytes of DRAM the node's segment serves.",
               static_cast<double>(g.segment_bytes));
  w.WriteGauge("kvpool_node_master_reachable",
               "1 while the master answers the node's heartbeat, else 0.",
               g.master_reachable ? 1.0 : 0.0);

  if (g.data != nullptr) {
    const transfer::DataServiceCounters& d = *g.data;
    w.Family("kvpool_node_data_requests_total", "counter",
             "WRITE and READ requests received on the TCP data port (refused ones included).");
    w.Sample("kvpool_node_data_requests_total", {{"op", "write"}}, d.writes.load());
    w.Sample("kvpool_node_data_requests_total", {{"op", "read"}}, d.reads.load());
    w.Family("kvpool_node_data_bytes_total", "counter",
             "Page bytes written into / read out of the segment over TCP.");
    w.Sample("kvpool_node_data_bytes_total", {{"op", "write"}}, d.bytes_written.load());
    w.Sample("kvpool_node_data_bytes_total", {{"op", "read"}}, d.bytes_read.load());
    w.WriteCounter("kvpool_node_data_requests_refused_total",
                   "Data requests refused before any byte moved (unknown segment, range outside "
                   "it, malformed request).",
                   d.requests_refused.load());
    w.WriteCounter("kvpool_node_data_grants_refused_total",
                   "Tenant data requests refused for a missing, expired or invalid grant "
                   "(docs/security.md); also counted in kvpool_node_data_requests_refused_total.",
                   d.grants_refused.load());
  }

  const rpc::NodeStatusReply& a = g.attach;
  w.WriteGauge("kvpool_node_local_clients", "Standalone clients attached now.",
               static_cast<double>(a.sessions()));
  w.WriteGauge("kvpool_node_local_regions", "Client memory regions mapped now.",
               static_cast<double>(a.regions()));
  w.WriteGauge("kvpool_node_local_mapped_bytes", "Bytes of client memory mapped now.",
               static_cast<double>(a.mapped_bytes()));
  w.WriteCounter("kvpool_node_local_clients_dropped_total",
                 "Standalone sessions ended by disconnect or silence past --local_client_ttl_ms.",
                 a.sessions_dropped());
  w.WriteCounter("kvpool_node_local_copied_bytes_total",
                 "Bytes moved through clients' staging buffers: the copying fallback, used when "
                 "a client's pages are not shared memory.",
                 a.copied_bytes());
  w.WriteCounter("kvpool_node_local_zero_copy_bytes_total",
                 "Bytes moved straight between the segment and clients' shared pages.",
                 a.zero_copy_bytes());

  w.Family("kvpool_node_local_requests_total", "counter",
           "Requests of standalone clients over the local socket, by method.");
  for (size_t i = 0; i < kMethods; ++i) {
    w.Sample("kvpool_node_local_requests_total", {{"method", kLocalMethodNames[i]}},
             methods_[i].requests.value());
  }
  w.Family("kvpool_node_local_errors_total", "counter",
           "Requests of standalone clients answered with an error, by method and code (per-key "
           "failures inside a batch that was served are not counted here).");
  for (size_t i = 0; i < kMethods; ++i) {
    methods_[i].errors.ForEach([&](int32_t code, uint64_t count) {
      std::string name = ErrorCodeName(static_cast<ErrorCode>(code));
      w.Sample("kvpool_node_local_errors_total", {{"method", kLocalMethodNames[i]}, {"code", name}},
               count);
    });
  }
  w.Family("kvpool_node_local_request_duration_seconds", "histogram",
           "Time the node spent on one request of a standalone client (the whole batch, copies "
           "included), by method.");
  for (size_t i = 0; i < kMethods; ++i) {
    w.Histogram("kvpool_node_local_request_duration_seconds", {{"method", kLocalMethodNames[i]}},
                methods_[i].latency.Take());
  }
  return w.Take();
}

}  // namespace kvpool::node
