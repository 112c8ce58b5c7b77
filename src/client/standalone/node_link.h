// A standalone client's link to its local `kvpool node`.
//
// One control connection anchors the session (ATTACH, region registration, heartbeats): when it
// closes, the node drops the session and unmaps the client's memory. Data calls run on a pool of
// further connections joined to the same session (JOIN_SESSION), so calls from many threads
// proceed in parallel.
//
// When the node goes away the link goes down; the next call or heartbeat re-attaches (a new
// session) and registers every region again, with the descriptors it kept. Calls made while the
// node is unreachable fail within their deadline with RPC_FAIL / RPC_TIMEOUT.
//
// Thread-safe.
#pragma once

#include <google/protobuf/message_lite.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "client/standalone/region_table.h"
#include "common/deadline_mutex.h"
#include "common/time.h"
#include "kvpool/status.h"
#include "rpc/unix_connection.h"

namespace kvpool::client {

struct NodeLinkOptions {
  std::string socket_name;  // "@kvpool_node_<port>.sock" or a path
  std::string client_id;
  Millis rpc_timeout{5000};
  Millis heartbeat_interval{1000};
  uint64_t mem_pool_size = 0;      // sent with ATTACH, for the node's logs
  uint64_t local_buffer_size = 0;  // likewise
};

class NodeLink {
 public:
  // `regions` lists what to register again after a re-attach; it must not call into the link.
  NodeLink(NodeLinkOptions options, std::function<std::vector<Region>()> regions);
  ~NodeLink();  // Close()s

  // The first attach. Errors: RPC_FAIL (no node at the socket; the message says how to start
  // one), RPC_TIMEOUT, INVALID_VERSION.
  Status Attach(Deadline deadline);
  // Starts pinging the node every heartbeat_interval (re-attaching while it is down).
  void StartHeartbeat();

  // One call on the control connection; re-attaches first when the link is down.
  Status Control(rpc::Method method, const google::protobuf::MessageLite& request,
                 google::protobuf::MessageLite* response, Deadline deadline,
                 std::span<const int> fds = {});
  // One call on a data connection of the current session; re-attaches first when down.
  Status Data(rpc::Method method, const google::protobuf::MessageLite& request,
              google::protobuf::MessageLite* response, Deadline deadline);

  // Pings the node now: 0 when it and its master answer, 2 otherwise.
  int Health();
  // The node's segment name (empty before the first attach).
  std::string segment_name() const;
  // The master the node named at the last attach for the engine to ask itself (empty: the node
  // relays every query; AttachReply.master_server_address).
  std::string master_server_address() const;
  // Whether the last attach named a master (lock-free, like up()).
  bool names_master() const { return names_master_.load(std::memory_order_acquire); }
  // Whether the last call or heartbeat found the node attached (false once one failed, until a
  // re-attach succeeds).
  bool up() const;
  // Stops the heartbeat and closes every connection (the node then drops the session).
  void Close();

 private:
  using ConnPtr = std::unique_ptr<rpc::UnixConnection>;
  struct Idle {
    uint64_t generation;
    ConnPtr conn;
  };
  // REQUIRES: mu_ held. Re-attaches when down (or the control connection was closed by the node).
  Status EnsureUpLocked(Deadline deadline);
  // REQUIRES: mu_ held. A new session: connect, ATTACH, register every region.
  Status AttachLocked(Deadline deadline);
  // REQUIRES: mu_ held. Marks the link down after a failure of the control connection.
  void DownLocked(const Status& why);
  Result<ConnPtr> DataConnection(Deadline deadline, uint64_t* generation);
  void ReturnDataConnection(uint64_t generation, ConnPtr conn);
  void HeartbeatLoop();

  const NodeLinkOptions options_;
  const std::function<std::vector<Region>()> regions_;

  // Guards everything below up to data_mu_. Timed: a caller waits for it no longer than its own
  // deadline (a re-attach to a hung node holds it for up to rpc_timeout).
  mutable DeadlineMutex mu_;
  ConnPtr control_;
  // Written under mu_; read without it by up() (a query must not wait for a heartbeat in flight).
  std::atomic<bool> up_{false};
  std::atomic<bool> names_master_{false};  // written under mu_ at each attach
  bool closed_ = false;
  bool ever_attached_ = false;
  uint64_t session_id_ = 0;
  uint64_t session_token_ = 0;
  uint64_t generation_ = 0;  // bumped on every attach; stale data connections are dropped
  std::string segment_name_;
  std::string master_server_address_;

  std::mutex data_mu_;
  std::vector<Idle> idle_;  // guarded by data_mu_

  std::atomic<bool> master_reachable_{true};
  std::mutex hb_mu_;
  std::condition_variable hb_cv_;
  bool hb_stop_ = false;  // guarded by hb_mu_
  std::thread heartbeat_;
};

}  // namespace kvpool::client
