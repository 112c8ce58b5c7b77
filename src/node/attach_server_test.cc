// The attach server's limits against raw Unix sockets (no store behind it: nothing here gets
// past HELLO): a stall at every byte of a frame, connections that never attach, and the caps.
#include "node/attach_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "rpc/kvpool.pb.h"
#include "rpc/unix_connection.h"
#include "rpc/unix_socket.h"

namespace kvpool::node {
namespace {

std::string HelloFrame() {
  rpc::Hello hello;
  hello.set_protocol_version(rpc::kProtocolVersion);
  hello.set_peer_name("attach server test");
  std::string meta = hello.SerializeAsString();
  rpc::FrameHeader h;
  h.method = rpc::HELLO;
  h.request_id = 1;
  h.meta_len = static_cast<uint32_t>(meta.size());
  std::string out(rpc::kFrameHeaderBytes, '\0');
  rpc::EncodeFrameHeader(h, reinterpret_cast<uint8_t*>(out.data()));
  return out + meta;
}

// True once the server has closed `fd` (within `within`).
bool ClosedWithin(int fd, std::chrono::milliseconds within) {
  auto end = Clock::now() + within;
  while (Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[256];
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN)) return true;
  }
  return false;
}

class AttachServerTest : public ::testing::Test {
 protected:
  void Start(size_t max_connections, size_t max_pending) {
    name_ = "@kvpool_attach_server_test_" + std::to_string(::getpid());
    AttachServerOptions o;
    o.socket_names = {name_};
    o.frame_timeout = std::chrono::milliseconds(300);
    o.attach_timeout = std::chrono::milliseconds(600);
    o.max_connections = max_connections;
    o.max_pending = max_pending;
    server_ = std::make_unique<AttachServer>(o, &service_);
    ASSERT_TRUE(server_->Start().ok());
  }
  int Connect() {
    auto fd = rpc::ConnectUnix(name_, DeadlineAfter(std::chrono::seconds(2)));
    EXPECT_TRUE(fd.ok()) << fd.status().ToString();
    return fd.ok() ? std::move(fd).value().release() : -1;
  }

  AttachService service_{nullptr, AttachServiceOptions()};
  std::string name_;
  std::unique_ptr<AttachServer> server_;
};

// A peer that stops after any byte of its HELLO, or after HELLO without attaching, is closed
// (frame deadline 300 ms, attach deadline 600 ms); no thread waits on any of them.
TEST_F(AttachServerTest, StallAtEveryByteAndNoAttachAreTimedOut) {
  Start(4096, 256);
  const std::string hello = HelloFrame();
  std::vector<int> fds;
  for (size_t k = 0; k <= hello.size(); ++k) {  // k == size: HELLO sent whole, never ATTACH
    int fd = Connect();
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, hello.data(), k, MSG_NOSIGNAL), static_cast<ssize_t>(k));
    fds.push_back(fd);
  }
  for (size_t k = 0; k < fds.size(); ++k) {
    EXPECT_TRUE(ClosedWithin(fds[k], std::chrono::seconds(3))) << "stalled after byte " << k;
  }
  for (int fd : fds) ::close(fd);
  // Each leaves the count just after its socket closes.
  auto end = Clock::now() + std::chrono::seconds(2);
  while (server_->connections() > 0u && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_->connections(), 0u);
}

// Unattached connections past max_pending close the oldest: a new client's HELLO is answered.
TEST_F(AttachServerTest, IdleConnectionsPastThePendingCapCloseTheOldest) {
  Start(4096, 8);
  std::vector<int> idle;
  idle.reserve(64);
  for (int i = 0; i < 64; ++i) idle.push_back(Connect());
  auto conn = rpc::UnixConnection::Connect(name_, "test", DeadlineAfter(std::chrono::seconds(2)));
  EXPECT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_TRUE(ClosedWithin(idle[0], std::chrono::seconds(1)));
  // Evicted connections leave the count as their coroutines end, a moment later.
  auto end = Clock::now() + std::chrono::seconds(2);
  while (server_->pending() > 9u && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LE(server_->pending(), 9u);
  for (int fd : idle) ::close(fd);
}

// Past max_connections the refusal is an answer that says why, not a silent close.
TEST_F(AttachServerTest, PastMaxConnectionsHelloGetsAClearRefusal) {
  Start(4, 256);
  std::vector<int> held;
  held.reserve(4);
  for (int i = 0; i < 4; ++i) held.push_back(Connect());
  auto conn = rpc::UnixConnection::Connect(name_, "test", DeadlineAfter(std::chrono::seconds(2)));
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.code(), ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  EXPECT_NE(conn.status().message().find("4 local connections are open (the limit)"),
            std::string::npos)
      << conn.status().message();
  for (int fd : held) ::close(fd);
}

}  // namespace
}  // namespace kvpool::node
