// The node's local endpoint for standalone clients: listens on Unix sockets (the abstract
// "@kvpool_node_<port>.sock", plus an optional filesystem path), runs one thread per connection
// and hands each request to the AttachService. Connections are few (one or a handful per
// engine process) and their calls block on the store, so a thread each keeps it simple.
//
// Access: only processes running as the node's user (or root) may attach (SO_PEERCRED); any
// other local user's connection is closed unanswered (docs/security.md).
//
// Faults it contains: a malformed frame, an unexpected descriptor, a frame not completed within
// `frame_timeout` or a version mismatch closes that one connection with a log line; everyone
// else is served on. Every wait is bounded; Stop() returns once every connection thread has
// finished its current request.
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/time.h"
#include "kvpool/status.h"
#include "node/attach_service.h"
#include "node/node_metrics.h"
#include "rpc/unique_fd.h"

namespace kvpool::node {

// The abstract socket a node serving data port `port` listens on.
std::string LocalSocketName(uint16_t port);

struct AttachServerOptions {
  std::vector<std::string> socket_names;                     // "@abstract" or filesystem paths
  Clock::duration frame_timeout = std::chrono::seconds(10);  // one frame, once it has started
  Clock::duration tick = std::chrono::milliseconds(200);     // stop / silence checks
  size_t max_connections = 1024;
  NodeMetrics* metrics = nullptr;  // when set, every request is recorded there (must outlive)
};

class AttachServer {
 public:
  // `service` must outlive the server.
  AttachServer(AttachServerOptions options, AttachService* service);
  ~AttachServer();  // Stop()s

  // Listens on every name and starts accepting. Errors: RPC_FAIL (a name in use: another node
  // with the same --port on this host, or a live process on the path), INVALID_PARAMS.
  Status Start();
  // Stops accepting, ends every connection and joins the threads. Idempotent.
  void Stop();

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<ConnectionHandle> handle;
    std::atomic<bool> done{false};
  };
  void AcceptLoop();
  void Serve(Worker* worker);
  // Reads and answers frames until the peer leaves, errs or the server stops.
  void ServeFrames(LocalConnection& conn);
  void ReapWorkers(bool all);

  const AttachServerOptions options_;
  AttachService* const service_;
  std::vector<rpc::UniqueFd> listeners_;
  std::vector<std::string> paths_;  // filesystem sockets to unlink on stop
  rpc::UniqueFd wake_;              // eventfd that interrupts the accept loop
  std::thread acceptor_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  std::mutex workers_mu_;
  std::list<std::unique_ptr<Worker>> workers_;  // guarded by workers_mu_
};

}  // namespace kvpool::node
