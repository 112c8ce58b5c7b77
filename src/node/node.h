// `kvpool node`: the standalone storage process. Owns a DRAM segment, serves it over TCP,
// mounts it at the master and keeps it mounted (re-mounting after a master restart), and
// unmounts cleanly on shutdown.
#pragma once

#include <memory>
#include <string>

#include "master/master_client.h"
#include "node/heartbeat.h"
#include "node/node_options.h"
#include "node/segment_host.h"

namespace kvpool::node {

class Node {
 public:
  // REQUIRES: ValidateNodeOptions(options) returned OK.
  // Starts serving and tries to mount; a master that is not up yet is retried by the heartbeat.
  // Errors: as SegmentHost::Start.
  static Result<std::unique_ptr<Node>> Start(const NodeOptions& options);
  ~Node();  // Stop()s
  // Stops heartbeating, unmounts (bounded by the rpc timeout), stops serving. Idempotent.
  void Stop();

  const std::string& segment_name() const { return host_->name(); }

 private:
  explicit Node(const NodeOptions& options);
  void Mount();

  NodeOptions options_;
  std::string client_id_;
  std::unique_ptr<master::MasterClient> master_;
  std::unique_ptr<SegmentHost> host_;
  std::unique_ptr<Heartbeat> heartbeat_;
  bool stopped_ = false;
};

// Runs a node until SIGINT/SIGTERM. REQUIRES: BlockTerminationSignals() was called.
// Returns the process exit code (0 clean, 1 start-up failure with the reason printed).
int RunNode(const NodeOptions& options);

}  // namespace kvpool::node
