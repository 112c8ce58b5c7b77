#include "master/master.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "common/signals.h"

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

rpc::ServerOptions ServerOptionsOf(const MasterOptions& o) {
  rpc::ServerOptions s;
  s.name = "kvpool master";
  s.host = o.rpc_host;
  s.port = static_cast<uint16_t>(o.rpc_port);
  s.threads = o.rpc_threads;
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
      server_(std::make_unique<rpc::Server>(ServerOptionsOf(options), &service_)),
      routes_(&core_, &service_.metrics(), UnixNow()) {
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
    http_ = std::make_unique<HttpServer>("master http admin", MetricsHostOf(options),
                                         static_cast<uint16_t>(options.metrics_port),
                                         std::move(handlers));
  }
}

Master::~Master() { Stop(); }

Status Master::Start() {
  {
    std::lock_guard lock(mu_);
    if (started_) {
      return Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, "master already started");
    }
    started_ = true;
  }
  // HTTP first: it can be stopped and started again should the RPC port be taken.
  Status st = http_ != nullptr ? http_->Start() : Status::Ok();
  if (st.ok()) {
    st = server_->Start();
    if (!st.ok() && http_ != nullptr) http_->Stop();
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
  if (http_ != nullptr) http_->Stop();
  if (housekeeper_.joinable()) housekeeper_.join();
  server_->Stop();
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

int RunMaster(const MasterOptions& options) {
  Status st = ValidateMasterOptions(options);
  if (!st.ok()) {
    std::fprintf(stderr, "kvpool master: %s\n", st.ToString().c_str());
    return 1;
  }
  Master master(options);
  st = master.Start();
  if (!st.ok()) {
    // Both servers' errors name the address they could not bind.
    std::fprintf(stderr, "kvpool master: cannot start: %s\n", st.ToString().c_str());
    return 1;
  }
  spdlog::info("kvpool master listening on {}:{} epoch={:016x}", options.rpc_host, master.port(),
               master.epoch());
  if (options.enable_http_admin) {
    spdlog::info(
        "kvpool master http admin on {}:{} (/metrics /health /segments /objects "
        "/object /clients)",
        MetricsHostOf(options), master.http_port());
  }
  int sig = WaitForTerminationSignal();
  spdlog::info("kvpool master stopping on signal {}", sig);
  master.Stop();
  return 0;
}

}  // namespace kvpool::master
