// The node's local endpoint for standalone clients: listens on Unix sockets (the abstract
// "@kvpool_node_<port>.sock", plus an optional filesystem path) and hands each request to the
// AttachService.
//
// Threads: one I/O thread (Asio) waits on every connection and reads every frame without
// blocking; a fixed pool (`worker_threads`) runs the requests, which block on the store.
// An idle or slow connection holds no thread.
//
// Access: only processes running as the node's user (or root) may attach (SO_PEERCRED); any
// other local user's connection is closed unanswered (docs/security.md).
//
// Limits (docs/security.md). A connection must attach (ATTACH or JOIN_SESSION) within
// `attach_timeout` of being accepted; at most `max_pending` connections may be unattached at
// once, and a new one closes the oldest of them (a client that attaches at once is never shut
// out by idle ones); before it attaches a frame's metadata is at most 4 KiB. A frame must be
// complete within `frame_timeout` of its first byte. Past `max_connections` a new connection's
// HELLO is answered UNAVAILABLE_IN_CURRENT_STATUS ("... local connections are open") and it is
// closed.
//
// Faults it contains: a malformed frame, an unexpected descriptor, a frame not completed in
// time or a version mismatch closes that one connection with a log line; everyone else is
// served on. Stop() returns once every request in flight has finished.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <list>
#include <memory>
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
  std::vector<std::string> socket_names;                      // "@abstract" or filesystem paths
  Clock::duration frame_timeout = std::chrono::seconds(10);   // one frame, once it has started
  Clock::duration attach_timeout = std::chrono::seconds(10);  // accept to ATTACH / JOIN_SESSION
  Clock::duration tick = std::chrono::milliseconds(200);      // silent-session checks
  size_t max_connections = 4096;  // open at once; more are refused with a clear error
  size_t max_pending = 256;       // not yet attached at once; the oldest makes room
  int worker_threads = 0;         // run requests (they block on the store); 0: 2 per core, 8 to 64
  // After answering an attached connection, its worker waits this long for the connection's next
  // request and runs it at once (an engine's requests come in bursts: exists, get, get...). This
  // spares the two thread hops through the I/O thread that would otherwise double a small
  // request's latency. At most half of the workers linger at once; 0 turns it off.
  Clock::duration linger = std::chrono::milliseconds(2);
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
  // Stops accepting, ends every connection (requests in flight finish first) and joins the
  // threads. Idempotent.
  void Stop();
  // Open connections, and those of them not attached yet (tests and metrics).
  size_t connections() const { return open_count_.load(); }
  size_t pending() const { return pending_count_.load(); }

 private:
  struct Conn;
  asio::awaitable<void> AcceptLoop(size_t listener);
  asio::awaitable<void> Serve(std::shared_ptr<Conn> conn);
  // Reads the next frame into conn's reader. False when the connection must end.
  asio::awaitable<bool> ReadFrame(Conn& conn);
  // Answers one frame (on a worker thread, or inline for HELLO). False: close the connection.
  bool Answer(Conn& conn, rpc::UnixFrame& frame);
  // On a worker: answers conn's frame, then, when `linger`, every further complete frame that
  // arrives within options_.linger of the last answer. Returns with conn's reader reset, or
  // holding the start of a frame for the I/O thread to complete. False: close the connection.
  bool AnswerOnWorker(Conn& conn, bool linger);
  // Logs why reading from conn ended.
  static void LogReadEnd(const Conn& conn, const Status& why);
  void Admit(const std::shared_ptr<Conn>& conn);  // I/O thread
  void Attached(Conn& conn);                      // I/O thread
  void Rearm(Conn& conn);                         // I/O thread
  asio::awaitable<void> Housekeeping();

  const AttachServerOptions options_;
  AttachService* const service_;
  std::vector<rpc::UniqueFd> listeners_;
  std::vector<std::string> paths_;  // filesystem sockets to unlink on stop
  bool started_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_count_{0};
  std::atomic<size_t> pending_count_{0};
  std::atomic<int> lingering_{0};  // workers waiting for a connection's next request
  int max_lingering_ = 0;
  // Before io_: coroutines destroyed with io_ still reference these.
  std::list<std::shared_ptr<Conn>> conns_;  // every open connection, oldest first; I/O thread
  asio::io_context io_;
  std::vector<std::unique_ptr<asio::posix::stream_descriptor>> listen_waiters_;  // I/O thread
  std::unique_ptr<asio::thread_pool> pool_;
  std::thread io_thread_;
};

}  // namespace kvpool::node
