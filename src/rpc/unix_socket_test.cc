// Local frames over Unix sockets: descriptors arrive with their frame, malformed input is
// refused with INVALID_PARAMS, and every wait ends by its deadline.
#include "rpc/unix_socket.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "common/random_id.h"
#include "rpc/unix_connection.h"

namespace kvpool::rpc {
namespace {

Deadline Soon() { return DeadlineAfter(std::chrono::seconds(5)); }

std::pair<UniqueFd, UniqueFd> Pair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

TEST(UnixSocketTest, FrameWithDescriptorRoundTrip) {
  auto [a, b] = Pair();
  UniqueFd memfd(::memfd_create("t", MFD_CLOEXEC));
  ASSERT_TRUE(memfd.valid());
  ASSERT_EQ(::write(memfd.get(), "hello", 5), 5);
  FrameHeader h;
  h.method = REGISTER_REGION;
  h.request_id = 7;
  std::string meta = "meta-bytes";
  h.meta_len = static_cast<uint32_t>(meta.size());
  int fds[1] = {memfd.get()};
  ASSERT_TRUE(SendUnixFrame(a.get(), h, meta, fds, Soon()).ok());
  // A second frame without descriptors right behind it must not pick the first one's up.
  ASSERT_TRUE(SendUnixFrame(a.get(), h, meta, {}, Soon()).ok());
  UnixFrame in;
  ASSERT_TRUE(RecvUnixFrame(b.get(), UnixFrameLimits(), Soon(), &in).ok());
  EXPECT_EQ(in.header.request_id, 7u);
  EXPECT_EQ(in.meta, meta);
  ASSERT_EQ(in.fds.size(), 1u);
  char buf[5];
  ASSERT_EQ(::pread(in.fds[0].get(), buf, 5, 0), 5);
  EXPECT_EQ(std::string(buf, 5), "hello");
  ASSERT_TRUE(RecvUnixFrame(b.get(), UnixFrameLimits(), Soon(), &in).ok());
  EXPECT_TRUE(in.fds.empty());
}

TEST(UnixSocketTest, PayloadAndGarbageAreRefused) {
  auto [a, b] = Pair();
  FrameHeader h;
  h.method = LOCAL_GET;
  h.payload_len = 10;
  uint8_t head[kFrameHeaderBytes];
  EncodeFrameHeader(h, head);
  ASSERT_EQ(::write(a.get(), head, sizeof(head)), static_cast<ssize_t>(sizeof(head)));
  UnixFrame in;
  EXPECT_EQ(RecvUnixFrame(b.get(), UnixFrameLimits(), Soon(), &in).code(),
            ErrorCode::INVALID_PARAMS);
  auto [c, d] = Pair();
  std::string junk(64, 'G');
  ASSERT_EQ(::write(c.get(), junk.data(), junk.size()), 64);
  EXPECT_EQ(RecvUnixFrame(d.get(), UnixFrameLimits(), Soon(), &in).code(),
            ErrorCode::INVALID_PARAMS);
}

TEST(UnixSocketTest, TooManyDescriptorsAreRefused) {
  auto [a, b] = Pair();
  FrameHeader h;
  h.method = REGISTER_REGION;
  uint8_t head[kFrameHeaderBytes];
  EncodeFrameHeader(h, head);
  int fds[kMaxFdsPerFrame + 2];
  for (auto& f : fds) f = ::memfd_create("t", MFD_CLOEXEC);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(fds))];
  iovec v{head, sizeof(head)};
  msghdr msg{};
  msg.msg_iov = &v;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(fds));
  std::memcpy(CMSG_DATA(c), fds, sizeof(fds));
  ASSERT_GT(::sendmsg(a.get(), &msg, 0), 0);
  for (int f : fds) ::close(f);
  UnixFrame in;
  EXPECT_EQ(RecvUnixFrame(b.get(), UnixFrameLimits(), Soon(), &in).code(),
            ErrorCode::INVALID_PARAMS);
}

TEST(UnixSocketTest, DeadlinesAndClosedPeer) {
  auto [a, b] = Pair();
  UnixFrame in;
  auto start = Clock::now();
  EXPECT_EQ(RecvUnixFrame(b.get(), UnixFrameLimits(), DeadlineAfter(Millis(100)), &in).code(),
            ErrorCode::RPC_TIMEOUT);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  a.reset();
  Status st = RecvUnixFrame(b.get(), UnixFrameLimits(), Soon(), &in);
  EXPECT_EQ(st.code(), ErrorCode::RPC_FAIL);
  EXPECT_NE(st.message().find("closed"), std::string::npos);
}

TEST(UnixSocketTest, ListenConnectAbstractAndPath) {
  const std::string abstract = "@kvpool-test-" + RandomId();
  auto l = ListenUnix(abstract);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(ListenUnix(abstract).code(), ErrorCode::RPC_FAIL);  // taken
  auto c = ConnectUnix(abstract, Soon());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(WaitReadable(l->get(), std::chrono::seconds(2)));
  UniqueFd s = AcceptUnix(l->get());
  EXPECT_TRUE(s.valid());
  EXPECT_EQ(PeerOf(s.get()).pid, ::getpid());

  auto missing = ConnectUnix("@kvpool-test-nobody-" + RandomId(), Soon());
  EXPECT_EQ(missing.code(), ErrorCode::RPC_FAIL);
  EXPECT_EQ(ConnectUnix("", Soon()).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(ConnectUnix("@" + std::string(200, 'x'), Soon()).code(), ErrorCode::INVALID_PARAMS);

  const std::string path = "/tmp/kvpool-test-" + RandomId() + ".sock";
  {
    auto lp = ListenUnix(path);
    ASSERT_TRUE(lp.ok()) << lp.status().ToString();
    EXPECT_EQ(ListenUnix(path).code(), ErrorCode::RPC_FAIL);  // a live listener is kept
  }
  auto again = ListenUnix(path);  // the stale file of a closed listener is replaced
  EXPECT_TRUE(again.ok()) << again.status().ToString();
  ::unlink(path.c_str());
}

TEST(UnixSocketTest, ConnectionHandshakeAndErrors) {
  const std::string name = "@kvpool-test-" + RandomId();
  auto l = ListenUnix(name);
  ASSERT_TRUE(l.ok());
  // A tiny server: answers HELLO, then answers one request with an error.
  std::thread server([fd = l->get()] {
    ASSERT_TRUE(WaitReadable(fd, std::chrono::seconds(5)));
    UniqueFd s = AcceptUnix(fd);
    UnixFrame in;
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(RecvUnixFrame(s.get(), UnixFrameLimits(), Soon(), &in).ok());
      FrameHeader h = in.header;
      h.method |= kResponseBit;
      std::string meta;
      if (i == 0) {
        HelloReply r;
        r.set_protocol_version(kProtocolVersion);
        r.SerializeToString(&meta);
      } else {
        h.status = static_cast<int32_t>(ErrorCode::INVALID_PARAMS);
        ErrorInfo e;
        e.set_message("no such region");
        e.SerializeToString(&meta);
      }
      h.meta_len = static_cast<uint32_t>(meta.size());
      ASSERT_TRUE(SendUnixFrame(s.get(), h, meta, {}, Soon()).ok());
    }
  });
  auto conn = UnixConnection::Connect(name, "test", Soon());
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  UnregisterRegion req;
  Status st = (*conn)->Call(UNREGISTER_REGION, req, nullptr, Soon());
  EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(st.message(), "no such region");
  EXPECT_FALSE((*conn)->broken());
  server.join();
  // The server is gone: the next call fails and breaks the connection.
  EXPECT_EQ((*conn)->Call(UNREGISTER_REGION, req, nullptr, Soon()).code(), ErrorCode::RPC_FAIL);
  EXPECT_TRUE((*conn)->broken());
}

}  // namespace
}  // namespace kvpool::rpc
