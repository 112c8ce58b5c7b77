// Options of `kvpool node`, the standalone storage process. Flag names follow Mooncake's
// storage process so operators keep their habits.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "common/config_file.h"
#include "kvpool/client.h"
#include "kvpool/status.h"
#include "rpc/security_options.h"

namespace kvpool::node {

// The ClientOptions of the embedded client a node is, before its flags: the client's defaults
// except --host (empty: detected) and --port (50052, Mooncake's storage process).
ClientOptions NodeClientDefaults();

struct NodeOptions {
  // The embedded client that hosts the node's segment (node.cc hands it to the client library
  // as it is). The flags that are client settings write into it directly, under the node's
  // names:
  //   --host              client.local_hostname: how peers and the master reach this node.
  //                       Default "": this host's address on the route to the master
  //                       (ha::LocalAddressTowardMaster; 127.0.0.1 for a master on loopback),
  //                       filled in by ValidateNodeOptions, which also sets host_was_detected.
  //   --port              client.segment_port: data port (TCP), default 50052.
  //   --master_server_address  client.master_server_address.
  //   --use_hugepage      client.use_hugepage: MAP_HUGETLB (reserve pages first).
  //   --disk_path DIR, --disk_queue_depth, --disk_promote_after N: client.disk_path,
  //                       disk_queue_depth (io_uring operations in flight per ring) and
  //                       disk_promote_after (reads from disk after which an object is copied
  //                       back to DRAM; 0: never). A disk tier below the DRAM segment (one
  //                       preallocated file in DIR; docs/operations.md, "Disk tier").
  //   --heartbeat_interval_ms, --rpc_timeout_ms (deadline of each master call),
  //   --transfer_timeout_ms (deadline of one batch's transfers): client.heartbeat_interval,
  //                       rpc_timeout, transfer_timeout.
  // client.global_segment_size and client.disk_size are parsed by ValidateNodeOptions from
  // --global_segment_size and --disk_size below; the secret and TLS fields come from `security`
  // (client::ApplySecurityFlags, in node.cc).
  ClientOptions client = NodeClientDefaults();
  bool host_was_detected = false;
  std::string bind_address;  // --bind_address: default: --host when it is an IP, else 0.0.0.0
  // --global_segment_size: DRAM served ("4GB" style), into client.global_segment_size.
  std::string global_segment_size = "4GB";
  bool transparent_hugepage = false;  // --transparent_hugepage: madvise(MADV_HUGEPAGE)
  // --prefault: fault the segment in before the node mounts it, on every core (start-up waits:
  // 0.4 s per GB on a 2-vCPU VM, 2-9 s where its host never backed the memory), so writes into
  // a fresh node run at the speed of memory written before (issue 29). --prefault_in_background:
  // mount at once and fault it in behind, at the lowest priority (the first writes can overtake
  // it and pay the faults). --prefault false: pages fault in on first write.
  bool prefault = true;
  bool prefault_in_background = false;
  int io_threads = 2;              // --io_threads: data server threads
  std::string log_level = "info";  // --log_level
  // Standalone clients (attach over a Unix socket; always on "@kvpool_node_<port>.sock").
  std::string local_socket_path;    // --local_socket_path: also listen on this filesystem path
  int local_client_ttl_ms = 10000;  // --local_client_ttl_ms: drop a client silent this long
  int local_copy_threads = 0;       // --local_copy_threads: cores one large batch uses (0: auto)
  // HTTP /metrics, /health, /status. Port 0 (the default) picks a free port, logged at start and
  // in /status: several nodes share a host, so no fixed default can be right for all.
  bool enable_http_admin = true;  // --enable_http_admin
  int metrics_port = 0;           // --metrics_port
  // --drain_copy_ms: on SIGTERM, spend up to this long copying objects whose only replica is
  // here to other nodes before unmounting (0: do not copy).
  int drain_copy_ms = 0;
  // --disk_size SIZE: bytes of the disk tier, into client.disk_size; with --disk_path, both or
  // neither.
  std::string disk_size;

  // --auth_secret_file (or $KVPOOL_AUTH_SECRET), --tls_cert, --tls_key, --tls_ca,
  // --tls_verify_client: for the data port and for connections to the master and peer nodes
  // (docs/security.md). The secret is read by ValidateNodeOptions.
  rpc::SecurityOptions security;

  // --config FILE and which flags it set (common/config_file.h), for messages naming the line.
  ConfigSource config_source;
};

// Registers every flag above on `app`, plus --config FILE: TOML/INI with the same names without
// dashes, at the top or under [node] (common/config_file.h), read once the command line is
// parsed (the command line wins); a missing or bad file, an unknown key or a bad value throws
// CLI::ConfigError naming the file, line and key.
void AddNodeFlags(CLI::App& app, NodeOptions& o);
// Checks ranges, parses sizes, reads the secret (rpc::ResolveAuthSecret) and fills in --host
// when it was not given (the route to the master; a master host name is resolved for that);
// INVALID_PARAMS naming the flag, the value and the fix (FILE_NOT_FOUND for a missing secret or
// TLS file).
Status ValidateNodeOptions(NodeOptions& o);

// --master_server_address alone (part of ValidateNodeOptions): "host[:port]" or
// "etcd://MEMBERS[/cluster_id]"; INVALID_PARAMS naming the flag, the text and the expected form.
// `kvpool node` checks it first and exits 1 on it, as the CLI does on a bad --master
// (docs/operations.md): a malformed master address is a start-up failure, not a usage error.
Status ValidateMasterAddress(const NodeOptions& o);

}  // namespace kvpool::node
