#include "master/master_options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "common/cli_flags.h"
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

// The range check of one flag, named by `flag` (its first name without the dashes); run by
// ValidateMasterOptions on the parsed options.
using Check = std::function<Status(const MasterOptions& o, std::string_view flag)>;

// One flag of `kvpool master`: its CLI11 names (the first names it in errors), its help, how it
// is registered (the field it writes; --help shows the field's value in a default MasterOptions
// as the default) and the range its value must be in.
struct MasterFlag {
  std::string_view names;
  std::string_view help;
  std::function<void(CLI::App& app, MasterOptions& o, const MasterFlag& f)> add;
  Check check;      // null: any value of the field's type
  bool ha = false;  // checked by ValidateHaOptions, with --enable_ha only
};

std::string_view FlagName(const MasterFlag& f) {
  std::string_view n = f.names.substr(2);  // "--"
  return n.substr(0, n.find(','));
}

// The value a range is checked on: a duration's count, a number as it is.
template <typename T>
auto Count(const T& v) {
  if constexpr (requires { v.count(); }) {
    return v.count();
  } else {
    return v;
  }
}

// The values a number (or a duration's count) may take; an error names them "LO..HI UNIT".
struct Range {
  int64_t lo;
  int64_t hi;
  std::string_view unit = "";  // "seconds"; "" for a plain number
};

// `get` is a generic lambda returning the field: [](auto& o) -> auto& { return o.rpc_port; }.
template <typename Get>
Check InRange(Get get, Range r) {
  return [get, r](const MasterOptions& o, std::string_view flag) -> Status {
    const auto v = Count(get(o));
    if (std::cmp_less(v, r.lo) || std::cmp_greater(v, r.hi)) {
      return Bad(flag, std::to_string(v),
                 fmt::format("{}..{}{}{}", r.lo, r.hi, r.unit.empty() ? "" : " ", r.unit));
    }
    return Status::Ok();
  };
}

// A flag writing the field `get` returns, as CLI11 parses its type.
template <typename Get>
MasterFlag Field(std::string_view names, std::string_view help, Get get, Check check = nullptr,
                 bool show_default = true) {
  auto add = [get, show_default](CLI::App& app, MasterOptions& o, const MasterFlag& f) {
    CLI::Option* opt = app.add_option(std::string(f.names), get(o), std::string(f.help));
    if (show_default) opt->capture_default_str();
  };
  return {names, help, std::move(add), std::move(check)};
}
template <typename Get>
MasterFlag Field(std::string_view names, std::string_view help, Get get, Range range) {
  return Field(names, help, get, InRange(get, range));
}

// A flag taking an integer count of the duration field's unit.
template <typename Get>
MasterFlag Duration(std::string_view names, std::string_view help, Get get, Check check) {
  auto add = [get](CLI::App& app, MasterOptions& o, const MasterFlag& f) {
    AddDurationFlag(app, std::string(f.names), get(o), std::string(f.help));
  };
  return {names, help, std::move(add), std::move(check)};
}
template <typename Get>
MasterFlag Duration(std::string_view names, std::string_view help, Get get, Range range) {
  return Duration(names, help, get, InRange(get, range));
}

MasterFlag Ha(MasterFlag f) {
  f.ha = true;
  return f;
}

Status CheckAdvertiseHost(const MasterOptions& o, std::string_view flag) {
  // Published as the leader's address: clients must be able to parse it back.
  if (o.ha_advertise_host.empty()) return Status::Ok();
  const std::string& host = o.ha_advertise_host;
  auto ep = rpc::ParseEndpoint(ha::HostPort({host, 1}), 0, "--ha_advertise_host");
  const bool blank = std::any_of(host.begin(), host.end(),
                                 [](char c) { return static_cast<unsigned char>(c) <= ' '; });
  if (!ep.ok() || ep->host != host || blank) {
    return Bad(flag, "'" + host + "'",
               "a host name or IP address (IPv6 without brackets), e.g. 10.0.0.5");
  }
  return Status::Ok();
}

Status CheckLogLevel(const MasterOptions& o, std::string_view flag) {
  static constexpr std::array<std::string_view, 7> kLevels = {"trace", "debug",    "info", "warn",
                                                              "error", "critical", "off"};
  if (std::ranges::find(kLevels, o.log_level) != kLevels.end()) return Status::Ok();
  return Bad(flag, o.log_level, "trace, debug, info, warn, error, critical or off");
}

MasterFlag AllocationAlignment() {
  auto add = [](CLI::App& app, MasterOptions& o, const MasterFlag& f) {
    app.add_option_function<std::string>(
           std::string(f.names),
           [&o](const std::string& text) {
             auto v = ParseSize(text, "--allocation_alignment");
             if (!v.ok()) {
               throw CLI::ValidationError("--allocation_alignment", v.status().message());
             }
             o.allocation_alignment = *v;
           },
           std::string(f.help))
        ->default_str(std::to_string(o.allocation_alignment));
  };
  auto check = [](const MasterOptions& o, std::string_view flag) -> Status {
    uint64_t a = o.allocation_alignment;
    if (a == 0 || a > (1u << 20) || (a & (a - 1)) != 0) {
      return Bad(flag, std::to_string(a), "a power of two from 1 to 1048576");
    }
    return Status::Ok();
  };
  return {"--allocation_alignment", "alignment of every replica's offset and size (e.g. 64, 4KiB)",
          add, check};
}

MasterFlag TenantQuota() {
  auto add = [](CLI::App& app, MasterOptions& o, const MasterFlag& f) {
    app.add_option_function<std::vector<std::string>>(
        std::string(f.names),
        [&o](const std::vector<std::string>& values) {
          for (const std::string& v : values) {
            Status st = AddTenantQuota(v, o);
            if (!st.ok()) throw CLI::ValidationError("--tenant_quota", st.message());
          }
        },
        std::string(f.help));
  };
  return {"--tenant_quota",
          "TENANT=SIZE: replica bytes tenant TENANT may hold (repeatable, e.g. a=8GB)", add,
          nullptr};
}

// Every flag of `kvpool master` but the security and --config ones (shared with the node), in
// --help order.
const std::vector<MasterFlag>& MasterFlagTable() {
  static const std::vector<MasterFlag> table = [] {
    using std::chrono::hours;
    using Ms = std::chrono::milliseconds;
    using Sec = std::chrono::seconds;
    std::vector<MasterFlag> t;
    t.push_back(Field(
        "--rpc_host,--rpc_address", "address the RPC server binds",
        [](auto& o) -> auto& { return o.rpc_host; },
        [](const MasterOptions& o, std::string_view flag) -> Status {
          if (!o.rpc_host.empty()) return Status::Ok();
          return Bad(flag, "''", "an IP address such as 0.0.0.0");
        }));
    t.push_back(Field(
        "--rpc_port", "RPC port (0: any free port)", [](auto& o) -> auto& { return o.rpc_port; },
        Range{0, 65535}));
    t.push_back(Field(
        "--rpc_thread_num,--rpc_threads", "RPC I/O threads",
        [](auto& o) -> auto& { return o.rpc_threads; }, Range{1, 256}));
    t.push_back(Field(
        "--rpc_idle_spin_us",
        "microseconds an RPC thread polls for the next request before sleeping (0: sleep at once)",
        [](auto& o) -> auto& { return o.rpc_idle_spin_us; }, Range{0, kMaxSpinMicros}));
    // The ratios' checks are written so that NaN fails too.
    t.push_back(Field(
        "--eviction_high_watermark_ratio",
        "evict when a segment's or the pool's use passes this fraction",
        [](auto& o) -> auto& { return o.eviction_high_watermark_ratio; },
        [](const MasterOptions& o, std::string_view flag) -> Status {
          const double r = o.eviction_high_watermark_ratio;
          if (r > 0.0 && r <= 1.0) return Status::Ok();
          return Bad(flag, fmt::format("{}", r), "(0, 1], e.g. 0.90");
        }));
    t.push_back(Field(
        "--eviction_ratio", "fraction of capacity one eviction round frees",
        [](auto& o) -> auto& { return o.eviction_ratio; },
        [](const MasterOptions& o, std::string_view flag) -> Status {
          const double r = o.eviction_ratio;
          if (r >= 0.0 && r <= 1.0) return Status::Ok();
          return Bad(flag, fmt::format("{}", r), "[0, 1], e.g. 0.05");
        }));
    t.push_back(Duration(
        "--eviction_min_age_ms",
        "watermark eviction spares objects touched this recently (ms; 0: off)",
        [](auto& o) -> auto& { return o.eviction_min_age; },
        Range{0, Ms(hours(1)).count(), "milliseconds"}));
    t.push_back(Duration(
        "--disk_offload_wait_ms",
        "eviction spares objects waiting for their node's disk tier this long (ms; 0: off)",
        [](auto& o) -> auto& { return o.disk_offload_wait; },
        Range{0, Ms(hours(1)).count(), "milliseconds"}));
    t.push_back(Duration(
        "--commit_ack_timeout_ms",
        "a put is acknowledged once a replica's host recorded it, or fails "
        "after this; an upsert or remove once the old replicas' hosts dropped "
        "them, or after this (ms; 0: acknowledge at once)",
        [](auto& o) -> auto& { return o.commit_ack_timeout; }, Range{0, 60000, "milliseconds"}));
    t.push_back(Duration(
        "--default_kv_lease_ttl", "read lease in milliseconds",
        [](auto& o) -> auto& { return o.default_kv_lease_ttl; },
        Range{1, Ms(hours(1)).count(), "milliseconds"}));
    t.push_back(Duration(
        "--client_ttl", "seconds of silence after which a client is dead",
        [](auto& o) -> auto& { return o.client_ttl; }, Range{1, Sec(hours(1)).count(), "seconds"}));
    t.push_back(Duration(
        "--put_start_discard_timeout_sec",
        "seconds after which a pending put no longer blocks its key",
        [](auto& o) -> auto& { return o.put_start_discard_timeout_sec; },
        Range{1, Sec(hours(24)).count(), "seconds"}));
    t.push_back(Duration(
        "--put_start_release_timeout_sec", "seconds after which a pending put's space is freed",
        [](auto& o) -> auto& { return o.put_start_release_timeout_sec; },
        [](const MasterOptions& o, std::string_view flag) -> Status {
          auto discard = o.put_start_discard_timeout_sec;
          auto release = o.put_start_release_timeout_sec;
          if (release >= discard && release <= hours(24)) return Status::Ok();
          return Bad(flag, std::to_string(release.count()),
                     fmt::format("{}..86400 seconds (at least put_start_discard_timeout_sec)",
                                 discard.count()));
        }));
    t.push_back(AllocationAlignment());
    t.push_back(Field(
        "--enable_http_admin", "serve /metrics and the admin endpoints over HTTP (true/false)",
        [](auto& o) -> auto& { return o.enable_http_admin; }));
    t.push_back(Field(
        "--admin_writes",
        "serve HTTP admin endpoints that change state, POST /drain (true/false); "
        "with a pool secret they need 'Authorization: Bearer <secret>'",
        [](auto& o) -> auto& { return o.admin_writes; }));
    t.push_back(Field(
        "--metrics_port", "HTTP admin/metrics port (0: any free port)",
        [](auto& o) -> auto& { return o.metrics_port; },
        [](const MasterOptions& o, std::string_view flag) -> Status {
          auto port = [](auto& m) -> auto& { return m.metrics_port; };
          KVPOOL_RETURN_IF_ERROR(InRange(port, {0, 65535})(o, flag));
          if (o.enable_http_admin && o.metrics_port != 0 && o.metrics_port == o.rpc_port) {
            return Bad(flag, std::to_string(o.metrics_port),
                       "a port other than --rpc_port (or 0 for any free port)");
          }
          return Status::Ok();
        }));
    t.push_back(Field(
        "--metrics_host", "address the HTTP admin server binds (default: --rpc_host)",
        [](auto& o) -> auto& { return o.metrics_host; }, nullptr, false));
    t.push_back(Field(
        "--kv_events_endpoint",
        "ZMQ endpoint to publish KV events on, e.g. tcp://*:5557 (default: off)",
        [](auto& o) -> auto& { return o.kv_events.endpoint; }, nullptr, false));
    t.push_back(Field(
        "--kv_events_replay_endpoint",
        "ZMQ endpoint serving replays of recent KV event batches, e.g. tcp://*:5558",
        [](auto& o) -> auto& { return o.kv_events.replay_endpoint; },
        [](const MasterOptions& o, std::string_view flag) -> Status {
          if (!o.kv_events.endpoint.empty() || o.kv_events.replay_endpoint.empty()) {
            return Status::Ok();
          }
          return Bad(flag, o.kv_events.replay_endpoint,
                     "no replay endpoint without --kv_events_endpoint");
        },
        false));
    t.push_back(Field(
        "--kv_events_topic", "topic of the KV event batches",
        [](auto& o) -> auto& { return o.kv_events.topic; }));
    t.push_back(Field(
        "--kv_events_queue_size", "KV events waiting to be published before new ones are dropped",
        [](auto& o) -> auto& { return o.kv_events.queue_capacity; }, Range{1, 10'000'000}));
    t.push_back(Field(
        "--kv_events_replay_buffer", "KV event batches kept for replay",
        [](auto& o) -> auto& { return o.kv_events.replay_batches; }, Range{0, 1'000'000}));
    t.push_back(Field(
        "--kv_events_block_size",
        "block_size of BlockStored events: the engine's tokens per block (0: unknown)",
        [](auto& o) -> auto& { return o.kv_events.block_size; }));
    t.push_back(Field(
        "--placement_strategy", "where replicas go: random, free_ratio_first or local_first",
        [](auto& o) -> auto& { return o.placement_strategy; },
        [](const MasterOptions& o, std::string_view flag) -> Status {
          if (ParsePlacementStrategy(o.placement_strategy).ok()) return Status::Ok();
          return Bad(flag, o.placement_strategy, "random, free_ratio_first or local_first");
        }));
    t.push_back(Field(
        "--log_level", "trace, debug, info, warn, error, critical, off",
        [](auto& o) -> auto& { return o.log_level; }, CheckLogLevel));
    t.push_back(TenantQuota());
    t.push_back(Field(
        "--enable_ha", "join a leader election in etcd with other masters (true/false)",
        [](auto& o) -> auto& { return o.enable_ha; }));
    t.push_back(Ha(Field(
        "--etcd_endpoints", "etcd members for --enable_ha, \"h1:2379;h2:2379\"",
        [](auto& o) -> auto& { return o.etcd_endpoints; },
        [](const MasterOptions& o, std::string_view) -> Status {
          if (o.etcd_endpoints.empty()) {
            return Status(ErrorCode::INVALID_PARAMS,
                          "--enable_ha needs --etcd_endpoints, e.g. "
                          "\"10.0.0.1:2379;10.0.0.2:2379\"");
          }
          return ValidateEtcdAddress(o);  // --cluster_id too
        },
        false)));
    t.push_back(Field(
        "--cluster_id", "the pool's name in etcd (--enable_ha)",
        [](auto& o) -> auto& { return o.cluster_id; }));
    t.push_back(Ha(Field(
        "--ha_backend_type", "coordinator for --enable_ha: etcd",
        [](auto& o) -> auto& { return o.ha_backend_type; },
        [](const MasterOptions& o, std::string_view flag) -> Status {
          if (o.ha_backend_type == "etcd") return Status::Ok();
          return Bad(flag, o.ha_backend_type, "etcd (the only coordinator so far)");
        })));
    t.push_back(Ha(Field(
        "--ha_lease_ttl_sec",
        "leadership lease in seconds (a dead leader is replaced within about this)",
        [](auto& o) -> auto& { return o.ha_lease_ttl_sec; }, Range{1, 60, "seconds"})));
    t.push_back(Ha(Field(
        "--ha_restore_wait_ms",
        "a new leader lets nodes re-register this long before it serves keys",
        [](auto& o) -> auto& { return o.ha_restore_wait_ms; }, Range{0, 60000, "milliseconds"})));
    t.push_back(Ha(Field(
        "--ha_advertise_host",
        "host published as the leader's address (default: --rpc_host or host name)",
        [](auto& o) -> auto& { return o.ha_advertise_host; }, CheckAdvertiseHost, false)));
    return t;
  }();
  return table;
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
  for (const MasterFlag& f : MasterFlagTable()) f.add(app, o, f);
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
  for (const MasterFlag& f : MasterFlagTable()) {
    if (f.ha && f.check) KVPOOL_RETURN_IF_ERROR(f.check(o, FlagName(f)));
  }
  return Status::Ok();
}

Status ValidateMasterOptions(const MasterOptions& o) {
  for (const MasterFlag& f : MasterFlagTable()) {
    if (!f.ha && f.check) KVPOOL_RETURN_IF_ERROR(f.check(o, FlagName(f)));
  }
  KVPOOL_RETURN_IF_ERROR(rpc::ValidateTls(o.security, /*also_client=*/false));
  KVPOOL_RETURN_IF_ERROR(ValidateHaOptions(o));
  if (o.housekeeping_interval <= Clock::duration::zero()) {
    return Status(ErrorCode::INVALID_PARAMS, "housekeeping_interval must be positive");
  }
  return Status::Ok();
}

}  // namespace kvpool::master
