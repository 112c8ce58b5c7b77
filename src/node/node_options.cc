#include "node/node_options.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include "common/cli_flags.h"
#include "common/units.h"
#include "ha/etcd_address.h"
#include "rpc/endpoint.h"

namespace kvpool::node {

ClientOptions NodeClientDefaults() {
  ClientOptions c;
  c.local_hostname.clear();
  c.segment_port = 50052;
  return c;
}

void AddNodeFlags(CLI::App& app, NodeOptions& o) {
  app.add_option("--host", o.client.local_hostname,
                 "Host or IP under which peers and the master reach this node (default: this "
                 "host's address on the route to the master, 127.0.0.1 for a master on "
                 "loopback)");
  app.add_option("--bind_address", o.bind_address,
                 "IP to listen on (default: --host if it is an IP, else 0.0.0.0)");
  app.add_option("--port", o.client.segment_port, "Data port (TCP)")->capture_default_str();
  app.add_option("--master_server_address", o.client.master_server_address,
                 "Master host:port, or etcd://h1:2379;h2:2379[/cluster_id]")
      ->capture_default_str();
  app.add_option("--global_segment_size", o.global_segment_size,
                 "DRAM this node contributes, e.g. 4GB, 512MB")
      ->capture_default_str();
  app.add_flag("--use_hugepage", o.client.use_hugepage,
               "Back the segment with reserved huge pages");
  app.add_flag("--transparent_hugepage", o.transparent_hugepage,
               "Ask for transparent huge pages for the segment (madvise; slower first touch on "
               "VMs, see docs/operations.md)");
  app.add_option("--prefault", o.prefault,
                 "Fault the segment's pages in before the node serves it, so the first writes "
                 "run at full speed (true/false; bare --prefault, as before: true)")
      ->expected(0, 1)
      ->default_str("true");
  app.add_flag("--prefault_in_background", o.prefault_in_background,
               "With --prefault: serve at once and fault the pages in behind, at the lowest "
               "priority (faster start; the first writes may overtake it)");
  app.add_option("--io_threads", o.io_threads, "Data server threads")->capture_default_str();
  app.add_option("--zero_copy_send_min_bytes", o.client.zero_copy_send_min_bytes,
                 "Get replies (and the node's own puts) of at least this many bytes go zero-copy "
                 "(MSG_ZEROCOPY) where the kernel can; 0: never")
      ->capture_default_str();
  AddDurationFlag<int>(app, "--heartbeat_interval_ms", o.client.heartbeat_interval,
                       "Ping period to the master");
  AddDurationFlag<int>(app, "--rpc_timeout_ms", o.client.rpc_timeout,
                       "Deadline of each call to the master");
  app.add_option("--log_level", o.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  app.add_option("--local_socket_path", o.local_socket_path,
                 "Also serve standalone clients on this Unix socket path (besides the abstract "
                 "@kvpool_node_<port>.sock)");
  app.add_option("--local_client_ttl_ms", o.local_client_ttl_ms,
                 "Drop a standalone client silent this long and unmap its memory")
      ->capture_default_str();
  AddDurationFlag<int>(app, "--transfer_timeout_ms", o.client.transfer_timeout,
                       "Deadline of the data phase of one batch");
  app.add_option("--local_copy_threads", o.local_copy_threads,
                 "Threads that copy one large batch of a standalone client (0: one per core, "
                 "at most 8; 1: no splitting)")
      ->capture_default_str();
  app.add_option("--enable_http_admin", o.enable_http_admin,
                 "Serve /metrics, /health and /status over HTTP (true/false)")
      ->capture_default_str();
  app.add_option("--metrics_port", o.metrics_port,
                 "HTTP port of /metrics /health /status on --bind_address (0: any free port, "
                 "logged at start)")
      ->capture_default_str();
  app.add_option("--drain_copy_ms", o.drain_copy_ms,
                 "On SIGTERM, copy objects whose only replica is here to other nodes for up to "
                 "this long before unmounting (0: do not copy)")
      ->capture_default_str();
  app.add_option("--disk_path", o.client.disk_path,
                 "Directory of this node's disk tier (it must exist and be writable; one "
                 "preallocated file of --disk_size is kept there)");
  app.add_option("--disk_size", o.disk_size, "Bytes of the disk tier, e.g. 100GB");
  app.add_option("--disk_queue_depth", o.client.disk_queue_depth,
                 "io_uring operations in flight per disk ring")
      ->capture_default_str();
  app.add_option("--disk_promote_after", o.client.disk_promote_after,
                 "Reads from the disk tier after which an object is copied back into DRAM in "
                 "the background (0: never)")
      ->capture_default_str();
  rpc::AddSecurityFlags(app, o.security, /*server=*/true);
  AddConfigFileFlag(app, "node", o.config_source);
}

Status ValidateMasterAddress(const NodeOptions& o) {
  auto master =
      ha::ParseMasterAddress(o.client.master_server_address, 50051, "--master_server_address");
  return master.ok() ? Status::Ok() : master.status();
}

Status ValidateNodeOptions(NodeOptions& o) {
  auto size = ParseSize(o.global_segment_size, "--global_segment_size");
  if (!size.ok()) return size.status();
  if (*size == 0) {
    return Status(ErrorCode::INVALID_PARAMS, "--global_segment_size must be larger than 0");
  }
  o.client.global_segment_size = *size;
  if (o.client.disk_path.empty() != o.disk_size.empty()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("--disk_path '{}' and --disk_size '{}': give both (a disk tier) or "
                              "neither",
                              o.client.disk_path, o.disk_size));
  }
  if (!o.disk_size.empty()) {
    auto disk = ParseSize(o.disk_size, "--disk_size");
    if (!disk.ok()) return disk.status();
    if (*disk < (uint64_t{1} << 20)) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("--disk_size {} is below the minimum of 1MB", o.disk_size));
    }
    o.client.disk_size = *disk;
  }
  const uint32_t depth = o.client.disk_queue_depth;
  if (depth == 0 || depth > 4096) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("--disk_queue_depth {} is not in [1, 4096]", depth));
  }
  auto master =
      ha::ParseMasterAddress(o.client.master_server_address, 50051, "--master_server_address");
  if (!master.ok()) return master.status();
  std::string& host = o.client.local_hostname;
  if (host.empty()) {
    auto detected = ha::LocalAddressTowardMaster(*master, "--master_server_address");
    if (!detected.ok()) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("cannot tell this node's address toward the master ({}); give "
                                "--host, the address other hosts reach this node by",
                                detected.status().message()));
    }
    host = *detected;
    o.host_was_detected = true;
  }
  if (o.bind_address.empty()) o.bind_address = rpc::DefaultBindAddress(host);
  auto range = [](const char* flag, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("{}={} is out of range [{}, {}]", flag, v, lo, hi));
    }
    return Status::Ok();
  };
  KVPOOL_RETURN_IF_ERROR(range("--io_threads", o.io_threads, 1, 256));
  const ClientOptions& c = o.client;
  KVPOOL_RETURN_IF_ERROR(range("--heartbeat_interval_ms", c.heartbeat_interval.count(), 10, 60000));
  KVPOOL_RETURN_IF_ERROR(range("--rpc_timeout_ms", c.rpc_timeout.count(), 10, 600000));
  KVPOOL_RETURN_IF_ERROR(range("--local_client_ttl_ms", o.local_client_ttl_ms, 100, 3600000));
  KVPOOL_RETURN_IF_ERROR(range("--transfer_timeout_ms", c.transfer_timeout.count(), 10, 3600000));
  KVPOOL_RETURN_IF_ERROR(range("--local_copy_threads", o.local_copy_threads, 0, 256));
  KVPOOL_RETURN_IF_ERROR(range("--metrics_port", o.metrics_port, 0, 65535));
  if (o.enable_http_admin && o.metrics_port != 0 && o.metrics_port == c.segment_port) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("--metrics_port={} is the data port (--port); pick another", o.metrics_port));
  }
  KVPOOL_RETURN_IF_ERROR(range("--drain_copy_ms", o.drain_copy_ms, 0, 3600000));
  KVPOOL_RETURN_IF_ERROR(rpc::ValidateTls(o.security, /*also_client=*/true));
  KVPOOL_RETURN_IF_ERROR(rpc::ResolveAuthSecret(o.security));
  if (!o.local_socket_path.empty() && o.local_socket_path.size() > 107) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("--local_socket_path '{}' is longer than 107 characters", o.local_socket_path));
  }
  return Status::Ok();
}

}  // namespace kvpool::node
