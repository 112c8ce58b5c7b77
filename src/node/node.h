// `kvpool node`: the standalone storage process. Its store is an embedded client
// (client/embedded/hosted_client.h) that hosts the node's DRAM segment: it serves the segment over TCP,
// mounts it at the master and keeps it mounted (re-mounting after a master restart). On top, the
// node serves standalone clients on the same host over a Unix socket (AttachServer): they share
// their host memory with the node and the node's store moves the bytes. Stop() ends the clients'
// sessions, unmounts and stops serving. With --enable_http_admin it serves /metrics, /health and
// /status over HTTP (NodeAdmin).
#pragma once

#include <memory>
#include <string>

#include "client/embedded/hosted_client.h"
#include "common/http_server.h"
#include "node/attach_server.h"
#include "node/attach_service.h"
#include "node/node_admin.h"
#include "node/node_metrics.h"
#include "node/node_options.h"

namespace kvpool::node {

class Node {
 public:
  // REQUIRES: ValidateNodeOptions(options) returned OK.
  // Starts serving and tries to mount; a master that is not up yet is retried by the heartbeat.
  // Errors: as SegmentHost::Start; RPC_FAIL when the local socket is taken.
  static Result<std::unique_ptr<Node>> Start(const NodeOptions& options);
  ~Node();  // Stop()s
  // Ends every standalone session, unmounts (bounded by the rpc timeout), stops serving.
  // Idempotent.
  void Stop();

  const std::string& segment_name() const { return segment_name_; }
  // Where standalone clients attach ("@kvpool_node_<port>.sock").
  const std::string& local_socket() const { return local_socket_; }
  // The bound HTTP port of /metrics; 0 when enable_http_admin is false.
  uint16_t http_port() const { return http_ != nullptr ? http_->port() : 0; }
  // The node's state as /metrics and /status report it.
  NodeGauges Gauges() const;

 private:
  explicit Node(const NodeOptions& options) : options_(options) {}

  NodeOptions options_;
  std::unique_ptr<client::HostedClient> store_;
  std::unique_ptr<AttachService> attach_service_;
  std::unique_ptr<AttachServer> attach_server_;
  NodeMetrics metrics_;
  std::unique_ptr<NodeAdmin> admin_;
  std::unique_ptr<HttpServer> http_;  // null unless enable_http_admin
  double start_unix_seconds_ = 0;
  std::string local_socket_;
  std::string segment_name_;
  bool stopped_ = false;
  bool mount_asked_ = false;  // MountSegmentNow called: Stop drains the segment
};

// Runs a node until SIGINT/SIGTERM. REQUIRES: BlockTerminationSignals() was called.
// Returns the process exit code (0 clean, 1 start-up failure with the reason printed).
int RunNode(const NodeOptions& options);

}  // namespace kvpool::node
