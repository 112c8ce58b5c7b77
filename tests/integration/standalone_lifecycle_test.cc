// Standalone mode over time: several client processes on one node, clients that die or fall
// silent (the node drops them and unmaps their memory), a node that restarts (clients get clean
// errors within their deadline, then re-attach and re-register by themselves), health checks
// and garbage on the local socket.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>

#include <cstring>
#include <filesystem>

#include "kvpool/host_allocator.h"
#include "rpc/unix_socket.h"
#include "standalone_support.h"

namespace kvpool::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

bool LogHas(Process& p, const std::string& text, milliseconds timeout = seconds(10)) {
  return Eventually([&] { return p.Log().find(text) != std::string::npos; }, timeout);
}

TEST(StandaloneLifecycleTest, TwoClientProcessesSharePages) {
  Pool pool;
  const uint16_t port = FreePort();
  auto node = StartNode(pool, port, "64MB");
  // Another process puts 8 pages of 512 KiB ...
  auto r = RunCommand(kChildBinary, {"put", std::to_string(port), "shared", "8", "524288"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("DONE 8"), std::string::npos) << r.output;
  // ... and two clients of this process read them back byte-exact.
  HostMemAllocator alloc;
  auto mem = alloc.Alloc(8 << 20);
  ASSERT_TRUE(mem.ok());
  auto* p = static_cast<uint8_t*>(*mem);
  for (int c = 0; c < 2; ++c) {
    auto client = Attach(StandaloneFor(port));
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->RegisterBuffer(p, 8 << 20).ok());
    std::vector<std::string> keys;
    std::vector<void*> ptrs;
    std::vector<size_t> sizes;
    for (int i = 0; i < 8; ++i) {
      keys.push_back("shared/" + std::to_string(i));
      ptrs.push_back(p + i * (1 << 20));
      sizes.push_back(1 << 20);
    }
    std::memset(p, 0, 8 << 20);
    auto got = client->BatchGetInto(keys, ptrs, sizes);
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
      EXPECT_EQ(*got[i], 524288u);
      EXPECT_TRUE(PageMatches(keys[i], static_cast<uint8_t*>(ptrs[i]), 524288));
    }
  }
  EXPECT_TRUE(alloc.Free(*mem).ok());
}

TEST(StandaloneLifecycleTest, KilledClientIsDroppedOthersKeepWorking) {
  Pool pool;
  const uint16_t port = FreePort();
  auto node = StartNode(pool, port, "64MB");
  auto survivor = Attach(StandaloneFor(port));
  ASSERT_NE(survivor, nullptr);
  const uint64_t base_bytes = NodeStatus(port)->mapped_bytes();
  Process child(kChildBinary, {"hold", std::to_string(port), std::to_string(32 << 20)}, "child");
  ASSERT_TRUE(LogHas(child, "READY")) << child.Log();
  auto with_child = NodeStatus(port);
  ASSERT_TRUE(with_child.ok());
  EXPECT_EQ(with_child->sessions(), 2u);
  EXPECT_GE(with_child->mapped_bytes(), base_bytes + (32u << 20));

  child.Signal(SIGKILL);
  EXPECT_TRUE(Eventually(
      [&] {
        auto s = NodeStatus(port);
        return s.ok() && s->sessions() == 1 && s->mapped_bytes() == base_bytes;
      },
      seconds(5)));
  EXPECT_EQ(NodeStatus(port)->sessions_dropped(), 1u);
  EXPECT_TRUE(LogHas(*node, "dropped local client"));
  std::vector<uint8_t> v(1000, 3);
  ASSERT_TRUE(survivor->BatchPut({"after"}, {std::span<const uint8_t>(v)})[0].ok());
  EXPECT_EQ(*survivor->BatchGet({"after"})[0], v);
}

TEST(StandaloneLifecycleTest, SilentClientIsDroppedAfterTheTtl) {
  Pool pool;
  const uint16_t port = FreePort();
  auto node = StartNode(pool, port, "32MB", {"--local_client_ttl_ms", "1500"});
  Process child(kChildBinary, {"hold", std::to_string(port), std::to_string(8 << 20)}, "child");
  ASSERT_TRUE(LogHas(child, "READY")) << child.Log();
  ASSERT_EQ(NodeStatus(port)->sessions(), 1u);
  child.Signal(SIGSTOP);  // alive, socket open, but no heartbeat
  auto stopped = std::chrono::steady_clock::now();
  EXPECT_TRUE(Eventually([&] { return NodeStatus(port)->sessions() == 0; }, seconds(6)));
  EXPECT_GE(std::chrono::steady_clock::now() - stopped, milliseconds(1000));
  EXPECT_EQ(NodeStatus(port)->mapped_bytes(), 0u);
  EXPECT_TRUE(LogHas(*node, "silent past the client TTL"));
  child.Signal(SIGCONT);
  child.Signal(SIGKILL);
}

TEST(StandaloneLifecycleTest, NodeRestartGivesCleanErrorsThenRecovers) {
  Pool pool;
  const uint16_t port = FreePort();
  auto node = StartNode(pool, port, "64MB");
  StandaloneOptions o = StandaloneFor(port);
  o.rpc_timeout = milliseconds(1000);
  o.transfer_timeout = milliseconds(2000);
  auto client = Attach(o);
  ASSERT_NE(client, nullptr);
  HostMemAllocator alloc;
  auto mem = alloc.Alloc(4 << 20);
  ASSERT_TRUE(mem.ok());
  auto* p = static_cast<uint8_t*>(*mem);
  // K and V halves, as SGLang registers them: both must be re-registered after the restart.
  ASSERT_TRUE(client->RegisterBuffer(p, 2 << 20).ok());
  ASSERT_TRUE(client->RegisterBuffer(p + (2 << 20), 2 << 20).ok());
  FillPage("before", p, 1 << 20);
  ASSERT_TRUE(client->PutFrom("before", p, 1 << 20).ok());
  EXPECT_EQ(client->HealthCheck(), 0);

  node.reset();  // SIGKILL: the pool's objects on it are gone with it
  const auto bound = 2 * o.rpc_timeout + o.transfer_timeout + seconds(2);
  auto start = std::chrono::steady_clock::now();
  Status put = client->PutFrom("during", p, 4096);
  EXPECT_TRUE(put.code() == ErrorCode::RPC_FAIL || put.code() == ErrorCode::RPC_TIMEOUT)
      << put.ToString();
  auto get = client->GetInto("before", p + (2 << 20), 1 << 20);
  EXPECT_TRUE(get.code() == ErrorCode::RPC_FAIL || get.code() == ErrorCode::RPC_TIMEOUT)
      << get.status().ToString();
  EXPECT_EQ(client->IsExist("before").code(), ErrorCode::RPC_FAIL);
  EXPECT_EQ(client->HealthCheck(), 2);
  EXPECT_LT(std::chrono::steady_clock::now() - start, bound);

  node = StartNode(pool, port, "64MB");
  // The heartbeat re-attaches and registers the regions again; the same pointers work.
  ASSERT_TRUE(Eventually([&] { return client->HealthCheck() == 0; }, seconds(10)));
  EXPECT_EQ(NodeStatus(port)->regions(), 2u);  // staging + the pool allocation
  FillPage("after", p + (2 << 20), 1 << 20);
  ASSERT_TRUE(client->PutFrom("after", p + (2 << 20), 1 << 20).ok());
  std::memset(p, 0, 1 << 20);
  auto back = client->GetInto("after", p, 1 << 20);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(PageMatches("after", p, 1 << 20));
  EXPECT_TRUE(LogHas(*node, "attached local client"));
  client.reset();
  EXPECT_TRUE(alloc.Free(p).ok());
}

TEST(StandaloneLifecycleTest, SetupErrorsHealthAndClose) {
  StandaloneOptions o;
  o.server_address = "127.0.0.1:" + std::to_string(FreePort());
  o.rpc_timeout = milliseconds(1000);
  auto start = std::chrono::steady_clock::now();
  auto none = Client::SetupStandalone(o);
  EXPECT_EQ(none.code(), ErrorCode::RPC_FAIL);
  EXPECT_NE(none.status().message().find("kvpool node"), std::string::npos)
      << none.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(2));
  o.server_address = "not an address:x";
  EXPECT_EQ(Client::SetupStandalone(o).code(), ErrorCode::INVALID_PARAMS);
  o.server_address = "127.0.0.1:1";
  o.rpc_timeout = milliseconds(0);
  EXPECT_EQ(Client::SetupStandalone(o).code(), ErrorCode::INVALID_PARAMS);

  Pool pool;
  const uint16_t port = FreePort();
  const std::string path = "/tmp/kvpool-test-" + std::to_string(port) + ".sock";
  // The node is killed at the end (SIGKILL), so it cannot remove its socket file itself.
  struct RemoveAtExit {
    const std::string& path;
    ~RemoveAtExit() { std::filesystem::remove(path); }
  } remove_socket{path};
  auto node = StartNode(pool, port, "16MB", {"--local_socket_path", path});
  StandaloneOptions by_path = StandaloneFor(port);
  by_path.server_address = path;  // the filesystem socket reaches the same node
  auto client = Attach(by_path);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->HealthCheck(), 0);
  pool.master().Signal(SIGSTOP);  // the node answers, its master does not
  EXPECT_TRUE(Eventually([&] { return client->HealthCheck() == 2; }, seconds(10)));
  pool.master().Signal(SIGCONT);
  EXPECT_TRUE(Eventually([&] { return client->HealthCheck() == 0; }, seconds(10)));
  EXPECT_TRUE(client->Close().ok());
  EXPECT_TRUE(client->Close().ok());
  EXPECT_EQ(client->HealthCheck(), 1);
  EXPECT_EQ(client->IsExist("k").code(), ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  std::vector<uint8_t> v(10);
  EXPECT_EQ(client->BatchPut({"k"}, {std::span<const uint8_t>(v)})[0].code(),
            ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  EXPECT_TRUE(Eventually([&] { return NodeStatus(port)->sessions() == 0; }, seconds(5)));
}

// The node opens its local socket before it mounts its segment at the master. A master that
// stops answering then (here: before the node starts) is reported by the node's health within
// the mount's deadline (--rpc_timeout_ms, 5 s), not after the mount's and a ping's.
TEST(StandaloneLifecycleTest, MasterSilentDuringTheNodesMountIsReportedWithinOneDeadline) {
  Pool pool;
  const uint16_t port = FreePort();
  pool.master().Signal(SIGSTOP);
  auto node = StartNode(pool, port, "16MB");
  auto client = Attach(StandaloneFor(port));
  ASSERT_NE(client, nullptr);
  const auto stopped = std::chrono::steady_clock::now();
  EXPECT_TRUE(Eventually([&] { return client->HealthCheck() == 2; }, seconds(8)));
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, milliseconds(6500));
  pool.master().Signal(SIGCONT);
  EXPECT_TRUE(Eventually([&] { return client->HealthCheck() == 0; }, seconds(10)));
  std::vector<uint8_t> v(1000, 7);
  EXPECT_TRUE(
      Eventually([&] { return client->BatchPut({"after"}, {std::span<const uint8_t>(v)})[0].ok(); },
                 seconds(10)));
  EXPECT_EQ(*client->BatchGet({"after"})[0], v);
}

TEST(StandaloneLifecycleTest, GarbageOnTheLocalSocketClosesOnlyThatConnection) {
  Pool pool;
  const uint16_t port = FreePort();
  auto node = StartNode(pool, port, "16MB");
  auto client = Attach(StandaloneFor(port));
  ASSERT_NE(client, nullptr);
  // Junk bytes.
  auto junk = rpc::ConnectUnix(LocalSocket(port), DeadlineAfter(seconds(2)));
  ASSERT_TRUE(junk.ok());
  std::string garbage(4096, 'G');
  ASSERT_GT(::send(junk->get(), garbage.data(), garbage.size(), MSG_NOSIGNAL), 0);
  // A well-formed HELLO, then a descriptor on a method that takes none.
  auto fds = rpc::ConnectUnix(LocalSocket(port), DeadlineAfter(seconds(2)));
  ASSERT_TRUE(fds.ok());
  rpc::Hello hello;
  hello.set_protocol_version(rpc::kProtocolVersion);
  rpc::FrameHeader h;
  h.method = rpc::HELLO;
  std::string meta = hello.SerializeAsString();
  h.meta_len = static_cast<uint32_t>(meta.size());
  ASSERT_TRUE(rpc::SendUnixFrame(fds->get(), h, meta, {}, DeadlineAfter(seconds(2))).ok());
  h.method = rpc::LOCAL_STAT;
  h.meta_len = 0;
  int one[1] = {fds->get()};
  ASSERT_TRUE(rpc::SendUnixFrame(fds->get(), h, "", one, DeadlineAfter(seconds(2))).ok());
  // A request before attaching is refused with a code, not a hang.
  auto raw = rpc::UnixConnection::Connect(LocalSocket(port), "raw", DeadlineAfter(seconds(2)));
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ((*raw)->Call(rpc::LOCAL_STAT, rpc::Empty(), nullptr, DeadlineAfter(seconds(2))).code(),
            ErrorCode::ILLEGAL_CLIENT);
  EXPECT_TRUE(LogHas(*node, "closing local connection"));
  std::vector<uint8_t> v(100, 1);
  ASSERT_TRUE(client->BatchPut({"fine"}, {std::span<const uint8_t>(v)})[0].ok());
  EXPECT_EQ(*client->BatchGet({"fine"})[0], v);
  EXPECT_EQ(NodeStatus(port)->sessions(), 1u);
}

}  // namespace
}  // namespace kvpool::testing
