// The master process's parts put together: the core, its RPC server, the housekeeping thread
// and the HTTP admin server, with one owner (Master) that starts and stops them all.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "common/http_server.h"
#include "kvpool/status.h"
#include "master/admin_routes.h"
#include "master/ha_service.h"
#include "master/kv_event_publisher.h"
#include "master/leader_election.h"
#include "master/master_core.h"
#include "master/master_options.h"
#include "master/master_service.h"
#include "rpc/server.h"

namespace kvpool::master {

class Master {
 public:
  // REQUIRES: ValidateMasterOptions(options).ok(). Nothing runs until Start().
  explicit Master(const MasterOptions& options);
  ~Master();  // Stop()s
  Master(const Master&) = delete;
  Master& operator=(const Master&) = delete;

  // Binds the RPC port and starts the server threads, the housekeeping thread (which calls
  // MasterCore::Housekeeping every options.housekeeping_interval) and, with enable_http_admin,
  // the HTTP admin server on metrics_port.
  // With enable_ha it then joins the election (master/leader_election.h) and serves as leader
  // only once elected; `on_lost_leadership` runs (on the election thread) if leadership is lost.
  // Errors: RPC_FAIL naming the address when the RPC or the metrics port is taken (nothing is
  // left running); INVALID_PARAMS for a host that is not an IP address; with HA,
  // ETCD_OPERATION_ERROR / RPC_TIMEOUT naming etcd when it does not answer within 5 s;
  // UNAVAILABLE_IN_CURRENT_STATUS when already started (a failed Start may be retried).
  Status Start(std::function<void()> on_lost_leadership = {});
  // Stops serving, joins every thread. Idempotent; safe without Start().
  void Stop();

  // The bound port (useful with rpc_port 0). Valid after a successful Start().
  uint16_t port() const { return server_->port(); }
  // The bound HTTP admin port; 0 when enable_http_admin is false. Valid after Start().
  uint16_t http_port() const { return http_ != nullptr ? http_->port() : 0; }
  uint64_t epoch() const { return core_.epoch(); }
  // For in-process callers and tests. Thread-safe.
  MasterCore& core() { return core_; }
  const MasterMetrics& metrics() const { return service_.metrics(); }
  // With enable_ha: role, epoch and leader (what /health shows). Role "single" without HA.
  HaView ha_view() const;
  // With enable_ha, after Start: true once leadership was lost (this Master serves nothing more;
  // RunMaster replaces it by a new one).
  bool lost_leadership() const { return election_ != nullptr && election_->lost(); }
  // How long Start waits for etcd's first answer.
  static constexpr Clock::duration kEtcdStartupDeadline = std::chrono::seconds(5);

 private:
  void HousekeepingLoop();

  const MasterOptions options_;
  MasterCore core_;
  MasterService service_;
  std::unique_ptr<LeaderElection> election_;  // null without enable_ha
  std::unique_ptr<HaService> ha_service_;     // null without enable_ha
  std::unique_ptr<rpc::Server> server_;
  AdminRoutes routes_;
  std::unique_ptr<HttpServer> http_;  // null unless enable_http_admin
  // Null unless --kv_events_endpoint. Declared after core_: destroyed first, after Stop has
  // stopped everything that records into its queue.
  std::unique_ptr<KvEventPublisher> events_;
  std::thread housekeeper_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;   // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
};

// The `kvpool master` command: validates, starts, logs "kvpool master listening on host:port
// epoch=…", waits for SIGINT/SIGTERM, stops. With enable_ha, a leadership lost ends the term:
// the Master is stopped and a new one (empty table) rejoins the election as a standby on the
// same ports, retried each second while etcd does not answer. Returns 0 on a signal, or 1 after
// printing why to stderr (bad options, port taken, etcd unreachable at the first start). REQUIRES:
// main called BlockTerminationSignals() before any thread started, and configured logging.
int RunMaster(const MasterOptions& options);

}  // namespace kvpool::master
