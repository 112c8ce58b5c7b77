// What the master's HTTP admin endpoints answer, free of any HTTP server (common/http_server.h
// serves them; tests and the fuzzer call them directly).
//
//   /health                          200 "OK"; with HA "OK role=leader epoch=N leader=HOST:PORT
//                                    cluster=etcd://…" (role: leader, restoring, standby, lost)
//   /metrics                         Prometheus text (MasterMetrics::Render)
//   /segments                        JSON: every mounted segment and the pool's totals
//   /objects?prefix=&limit=&cursor=  JSON: one page of keys (MasterCore::ListObjects); follow
//                                    next_cursor until it is empty. limit defaults to 100.
//   /object?key=K (or key_hex=HEX)   JSON: one object's size, state, replicas and lease
//   /clients                         JSON: clients and nodes heard from within --client_ttl
//   /tenants                         JSON: per tenant, replica bytes, objects and quota
//   /                                HTML: the status page (polls /status.json)
//   /status.json                     JSON: what the status page shows; with a pool secret the
//                                    HTTP server asks for it first (Authorization: Bearer)
//   POST /drain?segment=NAME[&undo=1] JSON: the segment takes no new replicas (or again); undo
//                                    is one of true/false/yes/no/1/0 (anything else: 400).
//                                    The HTTP server asks for the pool secret first when one is
//                                    set, and refuses every POST with --admin_writes=false.
//
// Bad parameters answer 400 with {"code": "INVALID_PARAMS", "message": "..."}; a missing object
// 404 with code OBJECT_NOT_FOUND; an unknown path 404. Keys that are not printable ASCII also
// carry "key_hex" (JSON strings hold them with invalid UTF-8 replaced). Every object shows its
// "tenant" ("default" for the default tenant) and its key as that tenant wrote it; ?tenant=T
// makes /objects' prefix and /object's key name tenant T's objects (docs/security.md).
//
// Threading: thread-safe (the core and the metrics are).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/http_server.h"
#include "master/leader_election.h"
#include "master/master_core.h"
#include "master/master_metrics.h"

namespace kvpool::master {

using AdminResponse = HttpResponse;

class AdminRoutes {
 public:
  using Params = HttpParams;
  using ClockFn = std::function<Clock::time_point()>;

  // Both must outlive the routes. `start_unix_seconds`: when the master started.
  AdminRoutes(MasterCore* core, const MasterMetrics* metrics, double start_unix_seconds,
              ClockFn clock = &Clock::now)
      : core_(core),
        metrics_(metrics),
        start_unix_seconds_(start_unix_seconds),
        clock_(std::move(clock)) {}

  // With HA: /health and /metrics show what `view` returns (role, epoch, leader). Call before
  // serving.
  void SetHaView(std::function<HaView()> view) { ha_view_ = std::move(view); }
  // More Prometheus text appended to /metrics (the KV-event publisher's counters). Call before
  // serving; `extra` must be thread-safe.
  void SetExtraMetrics(std::function<std::string()> extra) { extra_metrics_ = std::move(extra); }

  // Answers GET `path` with query `params` (already URL-decoded).
  AdminResponse Get(std::string_view path, const Params& params) const;
  // Answers POST `path` (only /drain changes anything; others answer 404).
  AdminResponse Post(std::string_view path, const Params& params) const;

  // The paths served (for the index page and tests).
  static const std::vector<std::string_view>& Paths();

 private:
  AdminResponse Metrics() const;
  AdminResponse Segments() const;
  AdminResponse Tenants() const;
  AdminResponse ObjectList(const Params& params) const;
  AdminResponse ObjectDetail(const Params& params) const;
  AdminResponse Clients() const;
  // The status page (status_routes.cc): "/" and the JSON it polls.
  AdminResponse StatusPage() const;
  AdminResponse StatusJson() const;

  MasterCore* const core_;
  const MasterMetrics* const metrics_;
  const double start_unix_seconds_;
  const ClockFn clock_;
  std::function<HaView()> ha_view_;             // empty without HA
  std::function<std::string()> extra_metrics_;  // empty: none
};

}  // namespace kvpool::master
