#include "master/master_options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "common/spin_wait.h"
#include "common/tenant_key.h"
#include "common/units.h"
#include "ha/etcd_address.h"
#include "master/placement.h"
#include "rpc/endpoint.h"

namespace kvpool::master {
namespace {

Status Bad(std::string_view flag, const std::string& value, std::string_view range) {
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("--{}={} is out of range: {}", flag, value, range));
}

template <typename Duration>
void AddDuration(CLI::App& app, const std::string& name, Duration& field, const std::string& help) {
  app.add_option_function<int64_t>(
         name, [&field](int64_t v) { field = Duration(v); }, help)
      ->default_str(std::to_string(field.count()));
}

}  // namespace

Status AddTenantQuota(std::string_view spec, MasterOptions& o) {
  size_t eq = spec.rfind('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("--tenant_quota={}: expected TENANT=SIZE, e.g. a=8GB", spec));
  }
  std::string_view tenant = NormalizeTenantId(spec.substr(0, eq));
  KVPOOL_RETURN_IF_ERROR(ValidateTenantId(tenant));
  auto size = ParseSize(spec.substr(eq + 1), "--tenant_quota");
  if (!size.ok()) return size.status();
  o.tenant_quotas[std::string(tenant)] = *size;
  return Status::Ok();
}

void AddMasterFlags(CLI::App& app, MasterOptions& o) {
  app.add_option("--rpc_host,--rpc_address", o.rpc_host, "address the RPC server binds")
      ->capture_default_str();
  app.add_option("--rpc_port", o.rpc_port, "RPC port (0: any free port)")->capture_default_str();
  app.add_option("--rpc_thread_num,--rpc_threads", o.rpc_threads, "RPC I/O threads")
      ->capture_default_str();
  app.add_option("--rpc_idle_spin_us", o.rpc_idle_spin_us,
                 "microseconds an RPC thread polls for the next request before sleeping (0: "
                 "sleep at once)")
      ->capture_default_str();
  app.add_option("--eviction_high_watermark_ratio", o.eviction_high_watermark_ratio,
                 "evict when a segment's or the pool's use passes this fraction")
      ->capture_default_str();
  app.add_option("--eviction_ratio", o.eviction_ratio,
                 "fraction of capacity one eviction round frees")
      ->capture_default_str();
  AddDuration(app, "--eviction_min_age_ms", o.eviction_min_age,
              "watermark eviction spares objects touched this recently (ms; 0: off)");
  AddDuration(app, "--disk_offload_wait_ms", o.disk_offload_wait,
              "eviction spares objects waiting for their node's disk tier this long (ms; 0: off)");
  AddDuration(app, "--commit_ack_timeout_ms", o.commit_ack_timeout,
              "a put is acknowledged once a replica's host recorded it, or fails after this "
              "(ms; 0: acknowledge at once)");
  AddDuration(app, "--default_kv_lease_ttl", o.default_kv_lease_ttl, "read lease in milliseconds");
  AddDuration(app, "--client_ttl", o.client_ttl, "seconds of silence after which a client is dead");
  AddDuration(app, "--put_start_discard_timeout_sec", o.put_start_discard_timeout_sec,
              "seconds after which a pending put no longer blocks its key");
  AddDuration(app, "--put_start_release_timeout_sec", o.put_start_release_timeout_sec,
              "seconds after which a pending put's space is freed");
  app.add_option_function<std::string>(
         "--allocation_alignment",
         [&o](const std::string& text) {
           auto v = ParseSize(text, "--allocation_alignment");
           if (!v.ok()) throw CLI::ValidationError("--allocation_alignment", v.status().message());
           o.allocation_alignment = *v;
         },
         "alignment of every replica's offset and size (e.g. 64, 4KiB)")
      ->default_str(std::to_string(o.allocation_alignment));
  app.add_option("--enable_http_admin", o.enable_http_admin,
                 "serve /metrics and the admin endpoints over HTTP (true/false)")
      ->capture_default_str();
  app.add_option("--admin_writes", o.admin_writes,
                 "serve HTTP admin endpoints that change state, POST /drain (true/false); with "
                 "a pool secret they need 'Authorization: Bearer <secret>'")
      ->capture_default_str();
  app.add_option("--metrics_port", o.metrics_port, "HTTP admin/metrics port (0: any free port)")
      ->capture_default_str();
  app.add_option("--metrics_host", o.metrics_host,
                 "address the HTTP admin server binds (default: --rpc_host)");
  app.add_option("--kv_events_endpoint", o.kv_events.endpoint,
                 "ZMQ endpoint to publish KV events on, e.g. tcp://*:5557 (default: off)");
  app.add_option("--kv_events_replay_endpoint", o.kv_events.replay_endpoint,
                 "ZMQ endpoint serving replays of recent KV event batches, e.g. tcp://*:5558");
  app.add_option("--kv_events_topic", o.kv_events.topic, "topic of the KV event batches")
      ->capture_default_str();
  app.add_option("--kv_events_queue_size", o.kv_events.queue_capacity,
                 "KV events waiting to be published before new ones are dropped")
      ->capture_default_str();
  app.add_option("--kv_events_replay_buffer", o.kv_events.replay_batches,
                 "KV event batches kept for replay")
      ->capture_default_str();
  app.add_option("--kv_events_block_size", o.kv_events.block_size,
                 "block_size of BlockStored events: the engine's tokens per block (0: unknown)")
      ->capture_default_str();
  app.add_option("--placement_strategy", o.placement_strategy,
                 "where replicas go: random, free_ratio_first or local_first")
      ->capture_default_str();
  app.add_option("--log_level", o.log_level, "trace, debug, info, warn, error, critical, off")
      ->capture_default_str();
  app.add_option_function<std::vector<std::string>>(
      "--tenant_quota",
      [&o](const std::vector<std::string>& values) {
        for (const std::string& v : values) {
          Status st = AddTenantQuota(v, o);
          if (!st.ok()) throw CLI::ValidationError("--tenant_quota", st.message());
        }
      },
      "TENANT=SIZE: replica bytes tenant TENANT may hold (repeatable, e.g. a=8GB)");
  app.add_option("--enable_ha", o.enable_ha,
                 "join a leader election in etcd with other masters (true/false)")
      ->capture_default_str();
  app.add_option("--etcd_endpoints", o.etcd_endpoints,
                 "etcd members for --enable_ha, \"h1:2379;h2:2379\"");
  app.add_option("--cluster_id", o.cluster_id, "the pool's name in etcd (--enable_ha)")
      ->capture_default_str();
  app.add_option("--ha_backend_type", o.ha_backend_type, "coordinator for --enable_ha: etcd")
      ->capture_default_str();
  app.add_option("--ha_lease_ttl_sec", o.ha_lease_ttl_sec,
                 "leadership lease in seconds (a dead leader is replaced within about this)")
      ->capture_default_str();
  app.add_option("--ha_restore_wait_ms", o.ha_restore_wait_ms,
                 "a new leader lets nodes re-register this long before it serves keys")
      ->capture_default_str();
  app.add_option("--ha_advertise_host", o.ha_advertise_host,
                 "host published as the leader's address (default: --rpc_host or host name)");
  rpc::AddSecurityFlags(app, o.security, /*server=*/true);
  AddConfigFileFlag(app, "master", o.config_source);
}

Status ValidateEtcdAddress(const MasterOptions& o) {
  if (!o.enable_ha || o.etcd_endpoints.empty()) return Status::Ok();
  auto members = ha::ParseEtcdEndpoints(o.etcd_endpoints, "--etcd_endpoints");
  if (!members.ok()) return members.status();
  return ha::ValidateClusterId(o.cluster_id, "--cluster_id");
}

Status ValidateHaOptions(const MasterOptions& o) {
  if (!o.enable_ha) return Status::Ok();
  if (o.ha_backend_type != "etcd") {
    return Bad("ha_backend_type", o.ha_backend_type, "etcd (the only coordinator so far)");
  }
  if (o.etcd_endpoints.empty()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "--enable_ha needs --etcd_endpoints, e.g. \"10.0.0.1:2379;10.0.0.2:2379\"");
  }
  KVPOOL_RETURN_IF_ERROR(ValidateEtcdAddress(o));
  if (o.ha_lease_ttl_sec < 1 || o.ha_lease_ttl_sec > 60) {
    return Bad("ha_lease_ttl_sec", std::to_string(o.ha_lease_ttl_sec), "1..60 seconds");
  }
  if (o.ha_restore_wait_ms < 0 || o.ha_restore_wait_ms > 60000) {
    return Bad("ha_restore_wait_ms", std::to_string(o.ha_restore_wait_ms), "0..60000 milliseconds");
  }
  // Published as the leader's address: clients must be able to parse it back.
  if (!o.ha_advertise_host.empty()) {
    const std::string& host = o.ha_advertise_host;
    auto ep = rpc::ParseEndpoint(ha::HostPort({host, 1}), 0, "--ha_advertise_host");
    const bool blank = std::any_of(host.begin(), host.end(),
                                   [](char c) { return static_cast<unsigned char>(c) <= ' '; });
    if (!ep.ok() || ep->host != host || blank) {
      return Bad("ha_advertise_host", "'" + host + "'",
                 "a host name or IP address (IPv6 without brackets), e.g. 10.0.0.5");
    }
  }
  return Status::Ok();
}

Status ValidateMasterOptions(const MasterOptions& o) {
  if (o.rpc_host.empty()) return Bad("rpc_host", "''", "an IP address such as 0.0.0.0");
  if (o.rpc_port < 0 || o.rpc_port > 65535) {
    return Bad("rpc_port", std::to_string(o.rpc_port), "0..65535");
  }
  if (o.rpc_idle_spin_us < 0 || o.rpc_idle_spin_us > kMaxSpinMicros) {
    return Bad("rpc_idle_spin_us", std::to_string(o.rpc_idle_spin_us),
               fmt::format("0..{}", kMaxSpinMicros));
  }
  if (o.rpc_threads < 1 || o.rpc_threads > 256) {
    return Bad("rpc_thread_num", std::to_string(o.rpc_threads), "1..256");
  }
  // Written so that NaN fails too.
  if (!(o.eviction_high_watermark_ratio > 0.0 && o.eviction_high_watermark_ratio <= 1.0)) {
    return Bad("eviction_high_watermark_ratio", fmt::format("{}", o.eviction_high_watermark_ratio),
               "(0, 1], e.g. 0.90");
  }
  if (!(o.eviction_ratio >= 0.0 && o.eviction_ratio <= 1.0)) {
    return Bad("eviction_ratio", fmt::format("{}", o.eviction_ratio), "[0, 1], e.g. 0.05");
  }
  using std::chrono::hours;
  if (o.eviction_min_age < std::chrono::milliseconds(0) || o.eviction_min_age > hours(1)) {
    return Bad("eviction_min_age_ms", std::to_string(o.eviction_min_age.count()),
               "0..3600000 milliseconds");
  }
  if (o.disk_offload_wait < std::chrono::milliseconds(0) || o.disk_offload_wait > hours(1)) {
    return Bad("disk_offload_wait_ms", std::to_string(o.disk_offload_wait.count()),
               "0..3600000 milliseconds");
  }
  if (o.commit_ack_timeout < std::chrono::milliseconds(0) ||
      o.commit_ack_timeout > std::chrono::milliseconds(60000)) {
    return Bad("commit_ack_timeout_ms", std::to_string(o.commit_ack_timeout.count()),
               "0..60000 milliseconds");
  }
  auto lease = o.default_kv_lease_ttl;
  if (lease < std::chrono::milliseconds(1) || lease > hours(1)) {
    return Bad("default_kv_lease_ttl", std::to_string(lease.count()), "1..3600000 milliseconds");
  }
  if (o.client_ttl < std::chrono::seconds(1) || o.client_ttl > hours(1)) {
    return Bad("client_ttl", std::to_string(o.client_ttl.count()), "1..3600 seconds");
  }
  auto discard = o.put_start_discard_timeout_sec;
  if (discard < std::chrono::seconds(1) || discard > hours(24)) {
    return Bad("put_start_discard_timeout_sec", std::to_string(discard.count()),
               "1..86400 seconds");
  }
  auto release = o.put_start_release_timeout_sec;
  if (release < discard || release > hours(24)) {
    return Bad(
        "put_start_release_timeout_sec", std::to_string(release.count()),
        fmt::format("{}..86400 seconds (at least put_start_discard_timeout_sec)", discard.count()));
  }
  if (o.metrics_port < 0 || o.metrics_port > 65535) {
    return Bad("metrics_port", std::to_string(o.metrics_port), "0..65535");
  }
  if (o.enable_http_admin && o.metrics_port != 0 && o.metrics_port == o.rpc_port) {
    return Bad("metrics_port", std::to_string(o.metrics_port),
               "a port other than --rpc_port (or 0 for any free port)");
  }
  uint64_t a = o.allocation_alignment;
  if (a == 0 || a > (1u << 20) || (a & (a - 1)) != 0) {
    return Bad("allocation_alignment", std::to_string(a), "a power of two from 1 to 1048576");
  }
  static constexpr std::array<std::string_view, 7> kLevels = {"trace", "debug",    "info", "warn",
                                                              "error", "critical", "off"};
  bool level_ok = false;
  for (auto l : kLevels) level_ok = level_ok || l == o.log_level;
  if (!level_ok) {
    return Bad("log_level", o.log_level, "trace, debug, info, warn, error, critical or off");
  }
  if (!ParsePlacementStrategy(o.placement_strategy).ok()) {
    return Bad("placement_strategy", o.placement_strategy,
               "random, free_ratio_first or local_first");
  }
  if (o.kv_events.endpoint.empty() && !o.kv_events.replay_endpoint.empty()) {
    return Bad("kv_events_replay_endpoint", o.kv_events.replay_endpoint,
               "no replay endpoint without --kv_events_endpoint");
  }
  if (o.kv_events.queue_capacity < 1 || o.kv_events.queue_capacity > 10'000'000) {
    return Bad("kv_events_queue_size", std::to_string(o.kv_events.queue_capacity), "1..10000000");
  }
  if (o.kv_events.replay_batches > 1'000'000) {
    return Bad("kv_events_replay_buffer", std::to_string(o.kv_events.replay_batches), "0..1000000");
  }
  KVPOOL_RETURN_IF_ERROR(rpc::ValidateTls(o.security, /*also_client=*/false));
  KVPOOL_RETURN_IF_ERROR(ValidateHaOptions(o));
  if (o.housekeeping_interval <= Clock::duration::zero()) {
    return Status(ErrorCode::INVALID_PARAMS, "housekeeping_interval must be positive");
  }
  return Status::Ok();
}

}  // namespace kvpool::master
