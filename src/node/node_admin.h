// What the node's HTTP endpoints answer, free of any HTTP server (Node serves them with
// common/http_server.h on --metrics_port; tests call them directly):
//
//   /health   200 "OK"
//   /metrics  Prometheus text (NodeMetrics::Render)
//   /status   JSON: segment, capacity, master reachability, data and standalone-client figures
//
// Threading: thread-safe.
#pragma once

#include <functional>
#include <string_view>

#include "common/http_server.h"
#include "node/node_metrics.h"

namespace kvpool::node {

class NodeAdmin {
 public:
  using GaugesFn = std::function<NodeGauges()>;
  // `metrics` must outlive the admin; `gauges` reads the node's state at request time.
  NodeAdmin(const NodeMetrics* metrics, GaugesFn gauges)
      : metrics_(metrics), gauges_(std::move(gauges)) {}

  // Answers GET `path`; unknown paths 404.
  HttpResponse Get(std::string_view path, const HttpParams& params) const;

 private:
  HttpResponse Status() const;

  const NodeMetrics* const metrics_;
  const GaugesFn gauges_;
};

}  // namespace kvpool::node
