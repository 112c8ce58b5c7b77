// Test support for standalone mode: nodes on chosen ports (so one can be restarted in place),
// the node's own status over its local socket, and deterministic page contents.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/pool_commands.h"
#include "kvpool/client.h"
#include "pool.h"
#include "process.h"
#include "rpc/kvpool.pb.h"
#include "rpc/unix_connection.h"

namespace kvpool::testing {

inline const std::string kChildBinary = KVPOOL_STANDALONE_CHILD;

inline std::string LocalSocket(uint16_t port) {
  return "@kvpool_node_" + std::to_string(port) + ".sock";
}

// The node's standalone status, or nullopt-like empty reply with ok=false when unreachable.
inline Result<rpc::NodeStatusReply> NodeStatus(uint16_t port) {
  auto conn = rpc::UnixConnection::Connect(LocalSocket(port), "test",
                                           DeadlineAfter(std::chrono::seconds(2)));
  if (!conn.ok()) return conn.status();
  rpc::NodeStatusReply r;
  Status st =
      (*conn)->Call(rpc::NODE_STATUS, rpc::Empty(), &r, DeadlineAfter(std::chrono::seconds(2)));
  if (!st.ok()) return st;
  return r;
}

// Polls `pred` every 50 ms for up to `timeout`.
template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

// `kvpool node` on `port` (its segment "127.0.0.1:<port>") against `pool`'s master; waits
// until its local socket answers and its segment is mounted.
inline std::unique_ptr<Process> StartNode(Pool& pool, uint16_t port, const std::string& size,
                                          std::vector<std::string> flags = {}) {
  flags.insert(flags.begin(), {"--heartbeat_interval_ms", "200"});
  auto p = std::make_unique<Process>(
      kBinary, NodeCommandLine(port, pool.master_address(), size, flags), "node");
  if (!Eventually([&] { return NodeStatus(port).ok(); }, std::chrono::seconds(20))) {
    ADD_FAILURE() << "node did not open its local socket:\n" << p->Log();
  }
  return p;
}

inline StandaloneOptions StandaloneFor(uint16_t port) {
  StandaloneOptions o;
  o.server_address = LoopbackAddress(port);
  o.rpc_timeout = std::chrono::milliseconds(2000);
  o.transfer_timeout = std::chrono::milliseconds(5000);
  o.heartbeat_interval = std::chrono::milliseconds(200);
  return o;
}

inline std::unique_ptr<Client> Attach(const StandaloneOptions& o) {
  auto c = Client::SetupStandalone(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c).value() : nullptr;
}

// The bytes of object `key`: a function of the key, so any process can verify them.
inline void FillPage(const std::string& key, uint8_t* p, size_t n) { FillObject(key, 0, p, n); }

inline bool PageMatches(const std::string& key, const uint8_t* p, size_t n) {
  std::vector<uint8_t> want(n);
  FillPage(key, want.data(), n);
  return memcmp(want.data(), p, n) == 0;
}

}  // namespace kvpool::testing
