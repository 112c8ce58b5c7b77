#include "master/master.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>

#include "common/signals.h"
#include "ha/etcd_address.h"
#include "rpc/endpoint.h"

namespace kvpool::master {
namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void Tally(const HousekeepingReport& r, HousekeepingTotals& t) {
  t.clients_expired.Add(r.dead_clients);
  t.segments_unmounted.Add(r.segments_unmounted);
  t.objects_dropped.Add(r.objects_dropped);
  t.reservations_reclaimed.Add(r.reservations_reclaimed);
  t.watermark_evicted_objects.Add(r.evicted.objects);
}

std::unique_ptr<LeaderElection> ElectionOf(const MasterOptions& o) {
  if (!o.enable_ha) return nullptr;
  ha::EtcdTarget target;
  target.endpoints = ha::ParseEtcdEndpoints(o.etcd_endpoints, "--etcd_endpoints").value();
  target.cluster_id = o.cluster_id;
  const auto ttl = std::chrono::seconds(o.ha_lease_ttl_sec);
  ElectionOptions eo;
  eo.fence_margin = std::chrono::duration_cast<Clock::duration>(ttl) / 3;
  eo.restore_wait = std::chrono::milliseconds(o.ha_restore_wait_ms);
  return std::make_unique<LeaderElection>(ha::MakeEtcdCoordinator(target, ttl), eo, nullptr);
}

// The host published as the leader's address: --ha_advertise_host, or --rpc_host unless it is
// a wildcard, else this host's address on the route to the first etcd member (what the other
// hosts of the cluster reach it by; a host name often resolves to a loopback address, as on a
// stock Debian host).
Result<std::string> AdvertiseHost(const MasterOptions& o) {
  if (!o.ha_advertise_host.empty()) return o.ha_advertise_host;
  if (o.rpc_host != "0.0.0.0" && o.rpc_host != "::") return o.rpc_host;
  auto members = ha::ParseEtcdEndpoints(o.etcd_endpoints, "--etcd_endpoints");
  if (!members.ok()) return members.status();
  auto local =
      rpc::LocalAddressToward(members->front().host, members->front().port, "--etcd_endpoints");
  if (!local.ok()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("cannot tell this master's address toward etcd ({}); give "
                              "--ha_advertise_host, the address clients and nodes reach it by",
                              local.status().message()));
  }
  spdlog::info(
      "publishing {} as this master's address when it leads: its address toward etcd "
      "(--ha_advertise_host overrides)",
      *local);
  return *local;
}

rpc::ServerOptions ServerOptionsOf(const MasterOptions& o) {
  rpc::ServerOptions s;
  s.name = "kvpool master";
  s.host = o.rpc_host;
  s.port = static_cast<uint16_t>(o.rpc_port);
  s.threads = o.rpc_threads;
  // Control requests are small and latency-bound: no hop between threads inside one.
  s.pin_connections = true;
  s.idle_spin = std::chrono::microseconds(o.rpc_idle_spin_us);
  s.security = o.security;
  s.protected_mode = !o.security.insecure;
  s.insecure_hint = "start the master with --insecure";
  return s;
}

}  // namespace

Master::Master(const MasterOptions& options)
    : options_(options),
      core_(options),
      service_(&core_, &Clock::now, GrantIssuer::For(options)),
      election_(ElectionOf(options)),
      ha_service_(election_ != nullptr ? std::make_unique<HaService>(&service_, election_.get())
                                       : nullptr),
      server_(std::make_unique<rpc::Server>(ServerOptionsOf(options),
                                            ha_service_ != nullptr
                                                ? static_cast<rpc::Service*>(ha_service_.get())
                                                : static_cast<rpc::Service*>(&service_))),
      routes_(&core_, &service_.metrics(), UnixNow()) {
  if (election_ != nullptr) routes_.SetHaView([this] { return ha_view(); });
  if (!options.kv_events.endpoint.empty()) {
    events_ = std::make_unique<KvEventPublisher>(options.kv_events);
    core_.SetKvEvents(events_->queue());
    routes_.SetExtraMetrics([this] { return events_->RenderMetrics(); });
  }
  if (options.enable_http_admin) {
    HttpHandlers handlers;
    handlers.get = [this](std::string_view path, const HttpParams& params) {
      return routes_.Get(path, params);
    };
    handlers.post = [this](std::string_view path, const HttpParams& params) {
      return routes_.Post(path, params);
    };
    handlers.post_enabled = options.admin_writes;
    handlers.post_disabled_reason =
        "admin writes are disabled on this master (--admin_writes=false)";
    handlers.post_secret = options.security.auth_secret;  // "" without a secret
    handlers.secret_get_paths = {"/status.json"};         // what the status page shows
    http_ = std::make_unique<HttpServer>("master http admin", MetricsHostOf(options),
                                         static_cast<uint16_t>(options.metrics_port),
                                         std::move(handlers));
  }
}

Master::~Master() { Stop(); }

HaView Master::ha_view() const {
  if (election_ == nullptr) return HaView{"single", 0, "", ""};
  return election_->view();
}

Status Master::Start(std::function<void()> on_lost_leadership) {
  {
    std::lock_guard lock(mu_);
    if (started_) {
      return Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, "master already started");
    }
    started_ = true;
  }
  // Events and HTTP first: they can be stopped and started again should the RPC port be taken.
  Status st = events_ != nullptr ? events_->Start() : Status::Ok();
  if (st.ok() && http_ != nullptr) {
    st = http_->Start();
    if (!st.ok() && events_ != nullptr) events_->Stop();
  }
  if (st.ok()) {
    st = server_->Start();
    if (!st.ok() && http_ != nullptr) http_->Stop();
    if (!st.ok() && events_ != nullptr) events_->Stop();
  }
  if (st.ok() && election_ != nullptr) {
    // Serving answers NOT_LEADER until the election says otherwise.
    election_->SetOnLost(std::move(on_lost_leadership));
    auto advertised = AdvertiseHost(options_);
    // Clients parse it back (ha/leader_locator.h): an IPv6 host goes in brackets.
    st = advertised.ok() ? election_->Start(ha::HostPort({*advertised, server_->port()}),
                                            DeadlineAfter(kEtcdStartupDeadline))
                         : advertised.status();
    if (!st.ok()) {
      server_->Stop();
      if (http_ != nullptr) http_->Stop();
      if (events_ != nullptr) events_->Stop();
    }
  }
  if (!st.ok()) {
    std::lock_guard lock(mu_);
    started_ = false;  // a later Start may try again
    return st;
  }
  if (http_ != nullptr && MetricsHostOf(options_) != "127.0.0.1" &&
      MetricsHostOf(options_) != "::1") {
    // The secret covers only the admin port's writes; TLS does not apply (docs/security.md).
    spdlog::warn(
        "HTTP admin on {}:{} is not authenticated for reads: it lists keys, clients and segments "
        "to anyone who can reach it{}; bind it to a trusted address with --metrics_host or turn "
        "it off with --enable_http_admin=false",
        MetricsHostOf(options_), http_->port(),
        !options_.admin_writes                  ? ""
        : options_.security.auth_secret.empty() ? ", and POST /drain to anyone (set a pool secret "
                                                  "or --admin_writes=false)"
                                                : "");
  }
  housekeeper_ = std::thread([this] { HousekeepingLoop(); });
  return Status::Ok();
}

void Master::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (election_ != nullptr) election_->Stop();  // a leader resigns first: a standby takes over
  if (http_ != nullptr) http_->Stop();
  if (housekeeper_.joinable()) housekeeper_.join();
  server_->Stop();
  if (events_ != nullptr) events_->Stop();  // last: what the others recorded is published
}

void Master::HousekeepingLoop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, options_.housekeeping_interval, [this] { return stopping_; })) {
    lock.unlock();
    HousekeepingReport r = core_.Housekeeping(Clock::now());
    Tally(r, service_.metrics().housekeeping());
    if (r.dead_clients + r.reservations_reclaimed + r.evicted.objects > 0) {
      spdlog::info(
          "housekeeping dead_clients={} segments_unmounted={} objects_dropped={} "
          "reservations_reclaimed={} evicted={} evicted_bytes={}",
          r.dead_clients, r.segments_unmounted, r.objects_dropped, r.reservations_reclaimed,
          r.evicted.objects, r.evicted.bytes);
    }
    lock.lock();
  }
}

namespace {

void LogStarted(const MasterOptions& options, Master& master) {
  spdlog::info("kvpool master listening on {}:{} epoch={:016x}", options.rpc_host, master.port(),
               master.epoch());
  if (options.enable_http_admin) {
    spdlog::info(
        "kvpool master http admin on {}:{} (/metrics /health /segments /objects "
        "/object /clients)",
        MetricsHostOf(options), master.http_port());
  }
  if (!options.kv_events.endpoint.empty()) {
    spdlog::info(
        "kvpool master kv events on {} topic={} replay={}", options.kv_events.endpoint,
        options.kv_events.topic,
        options.kv_events.replay_endpoint.empty() ? "off" : options.kv_events.replay_endpoint);
  }
  if (options.enable_ha) {
    HaView v = master.ha_view();
    spdlog::info("kvpool master ha: cluster={} role={} leader={} epoch={}", v.cluster, v.role,
                 v.leader.empty() ? "none" : v.leader, v.epoch);
  }
}

}  // namespace

int RunMaster(const MasterOptions& options) {
  Status st = ValidateMasterOptions(options);
  if (!st.ok()) {
    std::fprintf(stderr, "kvpool master: %s\n", st.ToString().c_str());
    return 1;
  }
  // Each term of this process is a whole new Master (empty table, new process epoch, standby
  // until it wins an election with a new leadership epoch): a leader that lost its lease (etcd
  // unreachable, process paused) drops everything of its term and rejoins, exactly as if its
  // supervisor had restarted it, so that no state of an old term can leak into a new one. Later
  // terms keep the ports the first one bound (also with port 0).
  MasterOptions term = options;
  for (int n = 0;; ++n) {
    Master master(term);
    st = master.Start();
    if (!st.ok() && n == 0) {
      // Both servers' errors name the address they could not bind.
      std::fprintf(stderr, "kvpool master: cannot start: %s\n", st.ToString().c_str());
      return 1;
    }
    if (!st.ok()) {
      // Rejoining: what cost the lease (etcd down) may still be wrong. Try again each second.
      spdlog::warn("kvpool master: rejoining {} as a standby failed: {}; retrying in 1 s",
                   master.ha_view().cluster, st.ToString());
      if (int sig = WaitForTerminationSignalFor(std::chrono::seconds(1)); sig != 0) {
        spdlog::info("kvpool master stopping on signal {}", sig);
        return 0;
      }
      continue;
    }
    if (n == 0) {
      LogStarted(options, master);
      term.rpc_port = master.port();
      if (options.enable_http_admin) term.metrics_port = master.http_port();
    } else {
      spdlog::warn("kvpool master: rejoined {} as a standby (empty table, epoch={:016x})",
                   master.ha_view().cluster, master.epoch());
    }
    // A lost leadership is noticed within 100 ms: the election thread has already stopped
    // serving (LeaderElection::Lose); this only ends the term.
    int sig = 0;
    while (sig == 0 && !master.lost_leadership()) {
      sig = WaitForTerminationSignalFor(std::chrono::milliseconds(100));
    }
    if (sig != 0) {
      spdlog::info("kvpool master stopping on signal {}", sig);
      master.Stop();
      return 0;
    }
    const std::string cluster = master.ha_view().cluster;
    master.Stop();
    std::fprintf(stderr,
                 "kvpool master: lost leadership of %s; rejoining the election as a standby with "
                 "an empty table\n",
                 cluster.c_str());
  }
}

}  // namespace kvpool::master
