// The master's status page (docs/operations.md, "Status page"): "/" serves the page compiled
// into the binary (status_page.html), "/status.json" the numbers it polls.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "master/admin_routes.h"
#include "master/status_page_html.h"

namespace kvpool::master {

using json = nlohmann::json;

AdminResponse AdminRoutes::StatusPage() const {
  AdminResponse r{200, "text/html; charset=utf-8", std::string(kStatusPageHtml)};
  return r;
}

AdminResponse AdminRoutes::StatusJson() const {
  rpc::StatReply s = core_->Stat();
  json segments = json::array();
  for (const rpc::SegmentInfo& seg : s.segments()) {
    segments.push_back({{"name", seg.segment_name()},
                        {"endpoint", seg.endpoint()},
                        {"tier", seg.tier() == kTierDram ? "DRAM" : "DISK"},
                        {"capacity_bytes", seg.size()},
                        {"used_bytes", seg.used()},
                        {"objects", seg.object_count()},
                        {"accepting", !seg.draining()}});
  }
  HaView ha = ha_view_ ? ha_view_() : HaView{"single", 0, "", ""};
  auto method = [this](MetricMethod m) {
    return json{{"requests", metrics_->requests(m)},
                {"keys", metrics_->keys(m)},
                {"found", metrics_->found(m)}};
  };
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  json j = {
      {"time", now},
      {"start_time", start_unix_seconds_},
      // Hex, as the logs show it (a JSON number loses a 64-bit epoch's low digits in JS).
      {"master_epoch", fmt::format("{:016x}", s.master_epoch())},
      {"ha",
       {{"role", ha.role}, {"epoch", ha.epoch}, {"leader", ha.leader}, {"cluster", ha.cluster}}},
      {"capacity_bytes", s.capacity()},
      {"used_bytes", s.used()},
      {"disk_capacity_bytes", s.disk_capacity()},
      {"disk_used_bytes", s.disk_used()},
      {"objects", s.object_count()},
      {"clients", s.client_count()},
      {"leases_held", s.leases_held()},
      {"bytes_leased", s.bytes_leased()},
      {"evicted_objects", s.evicted_total()},
      {"refused",
       {{"leased_or_pinned", s.refused_leased_or_pinned()},
        {"tenant_quota", s.refused_tenant_quota()},
        {"no_segment", s.refused_no_segment()},
        {"offload_pending", s.refused_offload_pending()}}},
      // put: keys given space at put start; get: keys located (found) by get_replica_list.
      {"put", method(MetricMethod::kPutStart)},
      {"get", method(MetricMethod::kGetReplicaList)},
      {"exists", method(MetricMethod::kExists)},
      {"remove", method(MetricMethod::kRemove)},
      {"segments", std::move(segments)},
  };
  // Segment names are opaque bytes: replace invalid UTF-8 rather than throw.
  return {200, "application/json", j.dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace kvpool::master
