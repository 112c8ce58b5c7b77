#include "node/node_admin.h"

#include <nlohmann/json.hpp>

#include "node/node_page_html.h"

namespace kvpool::node {

HttpResponse NodeAdmin::Get(std::string_view path, const HttpParams& /*params*/) const {
  if (path == "/health") return HttpResponse{200, "text/plain", "OK"};
  if (path == "/metrics") {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8",
                        metrics_->Render(gauges_())};
  }
  if (path == "/status") return Status();
  if (path == "/") return HttpResponse{200, "text/html; charset=utf-8", std::string(kNodePageHtml)};
  return HttpResponse{404, "text/plain", "not found; try /health /metrics /status\n"};
}

HttpResponse NodeAdmin::Status() const {
  NodeGauges g = gauges_();
  nlohmann::json j;
  j["segment"] = g.segment_name;
  j["capacity_bytes"] = g.segment_bytes;
  j["master_reachable"] = g.master_reachable;
  j["start_time_seconds"] = g.start_unix_seconds;
  if (g.data != nullptr) {
    j["data"] = {{"write_requests", g.data->writes.load()},
                 {"read_requests", g.data->reads.load()},
                 {"bytes_written", g.data->bytes_written.load()},
                 {"bytes_read", g.data->bytes_read.load()},
                 {"requests_refused", g.data->requests_refused.load()}};
  }
  const rpc::NodeStatusReply& a = g.attach;
  j["local_clients"] = {
      {"attached", a.sessions()},         {"regions", a.regions()},
      {"mapped_bytes", a.mapped_bytes()}, {"dropped_total", a.sessions_dropped()},
      {"copied_bytes", a.copied_bytes()}, {"zero_copy_bytes", a.zero_copy_bytes()}};
  // The segment name comes from --host: replace invalid UTF-8 rather than throw.
  return HttpResponse{200, "application/json",
                      j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"};
}

}  // namespace kvpool::node
