// The master's configuration: one plain struct, filled from flags (Mooncake's names) or a config
// file, and validated in one place before anything starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "common/config_file.h"
#include "common/time.h"
#include "kvpool/status.h"
#include "master/kv_events.h"
#include "rpc/security_options.h"

namespace CLI {
class App;
}  // namespace CLI

namespace kvpool::master {

struct MasterOptions {
  // Address the RPC server binds. Flag --rpc_host (alias --rpc_address). Default "0.0.0.0".
  std::string rpc_host = "0.0.0.0";
  // RPC port. Flag --rpc_port. Default 50051 (Mooncake's). 0 picks any free port (tests).
  int rpc_port = 50051;
  // RPC I/O threads. Flag --rpc_thread_num (alias --rpc_threads). Default 2; range 1..256.
  int rpc_threads = 2;
  // Microseconds an RPC thread keeps polling for the next request after answering one, before
  // it sleeps (rpc::ServerOptions::idle_spin): the calls of a client's burst then skip a CPU
  // wake-up each. Flag --rpc_idle_spin_us. Default 50; range 0..10000 (0: sleep at once).
  int rpc_idle_spin_us = 50;
  // Eviction starts when a segment's (or the whole pool's) used/capacity passes this.
  // Flag --eviction_high_watermark_ratio. Default 0.90; range (0, 1].
  double eviction_high_watermark_ratio = 0.90;
  // Fraction of capacity one eviction round frees. Flag --eviction_ratio. Default 0.05; range
  // [0, 1]. 0 disables watermark eviction; a failed allocation still evicts what it needs.
  double eviction_ratio = 0.05;
  // Watermark (background) eviction leaves objects put, found by exists or read more recently
  // than this alone (engines read what they just wrote; HiCache gets what exists just found);
  // a put that needs room evicts them too, last. Flag --eviction_min_age_ms. Default 2000 ms;
  // range 0 (off) .. 1 h.
  std::chrono::milliseconds eviction_min_age{2000};
  // Eviction spares an object on a DRAM segment with a disk tier below it while its copy to
  // that disk is pending, for at most this long after it was put or last read: evicting it
  // would lose it, so a put that finds only such objects is asked to retry
  // (PutStartResult.offload_pending) and the puts run at the disk's speed. Flag
  // --disk_offload_wait_ms. Default 10000 ms; range 0 (off) .. 1 h.
  std::chrono::milliseconds disk_offload_wait{10000};
  // A put is acknowledged once a host holding one of its replicas has recorded the commit in
  // its object list (segment journal), so a master that crashes or loses its leadership right
  // after the acknowledgement loses no acknowledged put: the next master rebuilds from those
  // lists. A key whose commit no host recorded within this long gets RPC_TIMEOUT (the object
  // stays committed here; a retried put finds it). An upsert that replaced objects, a remove
  // and a remove-all likewise wait for the hosts of the freed replicas to drop them, at most this
  // long (then they are answered as they are). Flag --commit_ack_timeout_ms. Default 1000 ms;
  // range 0 .. 60000 (0: acknowledge at once, as before: a failover may lose the puts of its
  // last moments, or bring back what they replaced).
  std::chrono::milliseconds commit_ack_timeout{1000};
  // Read lease granted by GetReplicaList. Flag --default_kv_lease_ttl, in milliseconds like
  // Mooncake's. Default 10000 ms; range 1 ms .. 1 h.
  std::chrono::milliseconds default_kv_lease_ttl{10000};
  // A client (or node) silent for this long is dead: its segments are unmounted and its pending
  // puts revoked. Flag --client_ttl, in seconds. Default 10 s; range 1 s .. 1 h.
  std::chrono::seconds client_ttl{10};
  // A pending put older than this no longer blocks another put of its key (the new put takes the
  // key). Flag --put_start_discard_timeout_sec. Default 30 s; range 1 s .. 1 day.
  std::chrono::seconds put_start_discard_timeout_sec{30};
  // A pending put's space is freed this long after its put start (a discarded writer may still
  // be writing until then, so its bytes are not handed to anyone else before). Flag
  // --put_start_release_timeout_sec. Default 600 s; range discard timeout .. 1 day.
  std::chrono::seconds put_start_release_timeout_sec{600};
  // Every replica's offset and reserved size are multiples of this. Flag --allocation_alignment
  // (a size: "64", "4KiB"). Default 64 bytes; a power of two in 1 B .. 1 MiB.
  uint64_t allocation_alignment = 64;
  // Serve /metrics and the admin endpoints (/health, /segments, /objects, /object, /clients)
  // over HTTP. Flag --enable_http_admin (true/false). Default true.
  bool enable_http_admin = true;
  // Serve the HTTP admin endpoints that change state (POST /drain). With a pool secret they
  // also need "Authorization: Bearer <secret>". Flag --admin_writes (true/false). Default true.
  bool admin_writes = true;
  // Port of the HTTP admin server. Flag --metrics_port. Default 9003 (Mooncake's metrics port);
  // 0 picks any free port (tests). Must differ from --rpc_port.
  int metrics_port = 9003;
  // Address the HTTP admin server binds. Flag --metrics_host. Default "" (same as --rpc_host).
  // The endpoints are unauthenticated: bind them to a trusted network.
  std::string metrics_host;
  // Where replicas go after a put's preferred_segments (master/placement.h): "random",
  // "free_ratio_first" or "local_first". Flag --placement_strategy. Default "random".
  std::string placement_strategy = "random";
  // spdlog level. Flag --log_level. Default "info"; one of trace, debug, info, warn, error,
  // critical, off.
  std::string log_level = "info";
  // Shared secret and TLS of the RPC port: --auth_secret_file (or $KVPOOL_AUTH_SECRET),
  // --tls_cert, --tls_key, --tls_ca, --tls_verify_client. See rpc/security_options.h and
  // docs/security.md. The secret is read by rpc::ResolveAuthSecret after parsing.
  rpc::SecurityOptions security;
  // Per-tenant capacity quotas in replica bytes (an object of size S with R replicas counts
  // S*R), keyed by normalized tenant id ("" is the default tenant). A put that would take its
  // tenant past the quota first evicts that tenant's own least recently used unleased objects,
  // then fails with TENANT_QUOTA_EXCEEDED. Flag --tenant_quota TENANT=SIZE (repeatable, e.g.
  // a=8GB; "default=..." for the default tenant). Default: none (no tenant has a quota).
  std::map<std::string, uint64_t, std::less<>> tenant_quotas;
  // Master high availability (docs/operations.md, "Three masters"). With enable_ha the master
  // joins the election of cluster `cluster_id` in etcd: one master leads and serves, the others
  // are standbys that refuse RPCs with NOT_LEADER and take over when the leader's lease lapses.
  // Flags --enable_ha (true/false, default false), --etcd_endpoints "h1:2379;h2:2379" (required
  // with HA), --cluster_id (default "kvpool"), --ha_backend_type (only "etcd"; Mooncake's
  // names), --ha_lease_ttl_sec (default 3, range 1..60: a dead leader is replaced within about
  // this long), --ha_restore_wait_ms (default 2000, range 0..60000: a new leader serves only
  // node traffic this long while the nodes re-register their objects), --ha_advertise_host (the
  // host published with the RPC port as the leader's address; default: --rpc_host, or this
  // host's address on the route to the first etcd member when that is a wildcard).
  bool enable_ha = false;
  std::string etcd_endpoints;
  std::string cluster_id = "kvpool";
  std::string ha_backend_type = "etcd";
  int ha_lease_ttl_sec = 3;
  int ha_restore_wait_ms = 2000;
  std::string ha_advertise_host;
  // KV events for cache-aware routers (docs/operations.md, "KV events"), off by default.
  // --kv_events_endpoint: ZMQ endpoint the PUB socket binds ("tcp://*:5557"); "" (default) off.
  // --kv_events_replay_endpoint: ZMQ endpoint of the ROUTER replay socket; "" (default) none.
  // --kv_events_topic: topic of every batch (evictions and drops add a suffix); default
  //   "kvpool". --kv_events_queue_size: events waiting for the publisher thread before new ones
  //   are dropped (counted); default 100000, range 1..10000000. --kv_events_replay_buffer:
  //   batches kept for replay; default 10000, range 0..1000000. --kv_events_block_size:
  //   BlockStored.block_size, the engine's tokens per block (kvpool never sees tokens);
  //   default 0 (unknown).
  KvEventOptions kv_events;
  // --config FILE and which flags it set (common/config_file.h), for messages naming the line.
  ConfigSource config_source;
  // How often the housekeeping thread expires clients, reclaims reservations and checks the
  // watermark. Not a flag. Default 100 ms.
  Clock::duration housekeeping_interval = std::chrono::milliseconds(100);
};

// Registers the flags named above on `app` from one table (each flag's names, help, the field it
// writes and its range check; MasterFlagTable in master_options.cc), writing into `o` (which must
// outlive parsing), plus
// `--config FILE`: a TOML/INI file whose keys are the same names without dashes
// ("rpc_port = 50052", at the top or under [master]; common/config_file.h), read once the
// command line is parsed (the command line wins). A missing or bad file, an unknown key or a
// bad value in it throws CLI::ConfigError naming the file, line and key. Parsing does no range
// checks beyond the type: call ValidateMasterOptions after (and WithConfigSource on its error).
void AddMasterFlags(CLI::App& app, MasterOptions& o);

// OK, or INVALID_PARAMS naming the first bad flag, its value and the valid range.
Status ValidateMasterOptions(const MasterOptions& o);

// The --enable_ha flags alone (part of ValidateMasterOptions): OK without HA.
Status ValidateHaOptions(const MasterOptions& o);

// The etcd address alone (part of ValidateHaOptions): --etcd_endpoints and --cluster_id, when
// --enable_ha is on and --etcd_endpoints given. INVALID_PARAMS naming the flag, the text and the
// expected form. `kvpool master` checks it first and exits 1 on it (docs/operations.md): a
// malformed coordinator address is a start-up failure like an unreachable etcd, not a usage
// error.
Status ValidateEtcdAddress(const MasterOptions& o);

// Parses one --tenant_quota value, "TENANT=SIZE", into o.tenant_quotas (a later one for the
// same tenant wins). INVALID_PARAMS naming the value when it is not of that form, the tenant id
// is invalid or the size does not parse.
Status AddTenantQuota(std::string_view spec, MasterOptions& o);

// The address the HTTP admin server binds: metrics_host, or rpc_host when that is empty.
inline const std::string& MetricsHostOf(const MasterOptions& o) {
  return o.metrics_host.empty() ? o.rpc_host : o.metrics_host;
}

}  // namespace kvpool::master
