// The server against real sockets: round trips with payloads both ways, and the faults a
// hostile or broken peer can cause (each must close only that connection).
#include "rpc/server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "rpc/connection.h"
#include "rpc/connection_pool.h"
#include "rpc/kvpool.pb.h"
#include "rpc/raw_peer_test_util.h"

namespace kvpool::rpc {
namespace {

// WRITE stores the payload; READ returns it. Enough to exercise both payload directions.
class EchoService : public Service {
 public:
  asio::awaitable<Reply> Handle(const FrameHeader& h, std::string_view meta,
                                PayloadReader& payload) override {
    if (h.method == WRITE) {
      stored_.resize(payload.size());
      // (GCC 12 cannot hold a braced initializer list across co_await: build it first.)
      std::vector<asio::mutable_buffer> into(1, asio::buffer(stored_));
      Status st = co_await payload.ReadInto(std::move(into));
      if (!st.ok()) co_return Reply::Error(st);
      co_return Reply::Of(Empty());
    }
    if (h.method == READ) {
      Reply r = Reply::Of(Empty());
      r.payload.push_back(asio::buffer(stored_));
      co_return r;
    }
    co_return Reply::Error(Status(ErrorCode::NOT_SUPPORTED, "method"));
  }
  std::string stored_;
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.limits.max_payload_bytes = 1 << 20;
    o.frame_timeout = std::chrono::milliseconds(300);
    server_ = std::make_unique<Server>(o, &service_);
    ASSERT_TRUE(server_->Start().ok());
    ep_ = Endpoint{"127.0.0.1", server_->port()};
  }
  Deadline Soon() { return DeadlineAfter(std::chrono::seconds(5)); }

  // A raw socket that has completed no handshake.
  int RawConnect() {
    int fd = RawLoopbackSocket(ep_.port);
    EXPECT_GE(fd, 0);
    return fd;
  }
  void ExpectStillServing() {
    auto c = Connection::Connect(ep_, "probe", Soon());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
  }

  EchoService service_;
  std::unique_ptr<Server> server_;
  Endpoint ep_;
};

TEST_F(ServerTest, PayloadRoundTripsScatterGather) {
  auto c = Connection::Connect(ep_, "t", Soon());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::string a = "hello ", b = "world";
  iovec out[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
  Empty resp;
  ASSERT_TRUE((*c)->Call(WRITE, Empty(), &resp, out, {}, Soon()).ok());
  char x[4], y[7];
  iovec in[2] = {{x, sizeof(x)}, {y, sizeof(y)}};
  ASSERT_TRUE((*c)->Call(READ, Empty(), &resp, {}, in, Soon()).ok());
  EXPECT_EQ(std::string(x, 4) + std::string(y, 7), "hello world");
}

TEST_F(ServerTest, ErrorResponseCarriesCodeAndMessage) {
  auto c = Connection::Connect(ep_, "t", Soon());
  ASSERT_TRUE(c.ok());
  Empty resp;
  Status st = (*c)->Call(STAT, Empty(), &resp, Soon());
  EXPECT_EQ(st.code(), ErrorCode::NOT_SUPPORTED);
  EXPECT_EQ(st.message(), "method");
  EXPECT_TRUE((*c)->Call(READ, Empty(), &resp, Soon()).ok());  // connection still usable
}

TEST_F(ServerTest, GarbageClosesOnlyThatConnection) {
  int fd = RawConnect();
  const char junk[64] = "GET / HTTP/1.1\r\n\r\n";
  ASSERT_EQ(::write(fd, junk, sizeof(junk)), static_cast<ssize_t>(sizeof(junk)));
  EXPECT_TRUE(PeerClosed(fd));
  ::close(fd);
  ExpectStillServing();
}

TEST_F(ServerTest, OversizedFrameIsRefused) {
  int fd = RawConnect();
  FrameHeader h;
  h.method = HELLO;
  h.payload_len = 1ull << 40;
  uint8_t buf[kFrameHeaderBytes];
  EncodeFrameHeader(h, buf);
  ASSERT_EQ(::write(fd, buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
  EXPECT_TRUE(PeerClosed(fd));
  ::close(fd);
  ExpectStillServing();
}

TEST_F(ServerTest, TruncatedFrameTimesOut) {
  int fd = RawConnect();
  FrameHeader h;
  h.method = HELLO;
  h.meta_len = 100;  // promise 100 bytes of meta, send none
  uint8_t buf[kFrameHeaderBytes];
  EncodeFrameHeader(h, buf);
  ASSERT_EQ(::write(fd, buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
  EXPECT_TRUE(PeerClosed(fd));  // frame_timeout is 300 ms
  ::close(fd);
  ExpectStillServing();
}

TEST_F(ServerTest, RequestBeforeHelloIsRefused) {
  int fd = RawConnect();
  FrameHeader h;
  h.method = READ;
  uint8_t buf[kFrameHeaderBytes];
  EncodeFrameHeader(h, buf);
  ASSERT_EQ(::write(fd, buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
  EXPECT_TRUE(PeerClosed(fd));
  ::close(fd);
}

TEST_F(ServerTest, VersionMismatchIsReported) {
  int fd = RawConnect();
  Hello hello;
  hello.set_protocol_version(kProtocolVersion + 1);
  std::string meta = hello.SerializeAsString();
  FrameHeader h;
  h.method = HELLO;
  h.version = kProtocolVersion + 1;
  h.meta_len = static_cast<uint32_t>(meta.size());
  uint8_t buf[kFrameHeaderBytes];
  EncodeFrameHeader(h, buf);
  ASSERT_EQ(::write(fd, buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
  ASSERT_EQ(::write(fd, meta.data(), meta.size()), static_cast<ssize_t>(meta.size()));
  uint8_t rb[kFrameHeaderBytes];
  ASSERT_EQ(::read(fd, rb, sizeof(rb)), static_cast<ssize_t>(sizeof(rb)));
  auto r = DecodeFrameHeader(rb, FrameLimits());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, static_cast<int32_t>(ErrorCode::INVALID_VERSION));
  ::close(fd);
}

TEST_F(ServerTest, WrongPayloadSizeGetsErrorNotCrash) {
  auto c = Connection::Connect(ep_, "t", Soon());
  ASSERT_TRUE(c.ok());
  Empty resp;
  char small[2];
  iovec in{small, sizeof(small)};
  std::string data = "12345";
  iovec out{data.data(), data.size()};
  ASSERT_TRUE((*c)->Call(WRITE, Empty(), &resp, {&out, 1}, {}, Soon()).ok());
  // The server sends 5 bytes; the caller expected 2: the call fails and the connection breaks.
  EXPECT_EQ((*c)->Call(READ, Empty(), &resp, {}, {&in, 1}, Soon()).code(),
            ErrorCode::TRANSFER_FAIL);
  EXPECT_TRUE((*c)->broken());
}

TEST_F(ServerTest, ConnectRefusedAndTimeouts) {
  Endpoint dead{"127.0.0.1", 1};
  EXPECT_EQ(Connection::Connect(dead, "t", Soon()).code(), ErrorCode::RPC_FAIL);
  // A listener that never answers: the handshake times out by its deadline.
  int l = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(l, 4), 0);
  socklen_t len = sizeof(a);
  getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  auto start = Clock::now();
  auto r = Connection::Connect({"127.0.0.1", ntohs(a.sin_port)}, "t",
                               DeadlineAfter(std::chrono::milliseconds(200)));
  EXPECT_EQ(r.code(), ErrorCode::RPC_TIMEOUT);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  ::close(l);
}

TEST_F(ServerTest, PoolReusesAndSurvivesServerRestart) {
  ConnectionPool pool("t");
  {
    auto l = pool.Acquire(ep_, Soon());
    ASSERT_TRUE(l.ok());
    Empty resp;
    ASSERT_TRUE((*l)->Call(READ, Empty(), &resp, Soon()).ok());
  }
  uint16_t port = server_->port();
  server_.reset();
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  server_ = std::make_unique<Server>(o, &service_);
  ASSERT_TRUE(server_->Start().ok());
  auto l = pool.Acquire(ep_, Soon());  // the stale idle connection is detected and replaced
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  Empty resp;
  EXPECT_TRUE((*l)->Call(READ, Empty(), &resp, Soon()).ok());
}

}  // namespace
}  // namespace kvpool::rpc
