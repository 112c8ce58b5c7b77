// The server against real sockets: round trips with payloads both ways, and the faults a
// hostile or broken peer can cause (each must close only that connection).
#include "rpc/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <thread>

#include "rpc/connection.h"
#include "rpc/connection_pool.h"
#include "rpc/echo_service_test_util.h"
#include "rpc/kvpool.pb.h"
#include "rpc/raw_peer_test_util.h"

namespace kvpool::rpc {
namespace {

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.limits.max_payload_bytes = 1 << 20;
    o.frame_timeout = std::chrono::milliseconds(300);
    o.handshake_timeout = std::chrono::milliseconds(300);
    o.idle_timeout = std::chrono::milliseconds(500);
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

// The bytes of one whole frame: header and meta.
std::string FrameBytes(uint16_t method, const std::string& meta) {
  FrameHeader h;
  h.method = method;
  h.request_id = 7;
  h.meta_len = static_cast<uint32_t>(meta.size());
  std::string out(kFrameHeaderBytes, '\0');
  EncodeFrameHeader(h, reinterpret_cast<uint8_t*>(out.data()));
  return out + meta;
}

std::string HelloMeta() {
  Hello hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_peer_name("raw test peer");
  return hello.SerializeAsString();
}

bool WriteAll(int fd, std::string_view bytes) {
  return ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
}

// Sends HELLO on a raw socket and reads the server's reply (a server without a secret: the
// connection is then past its handshake).
bool RawHello(int fd) {
  if (!WriteAll(fd, FrameBytes(HELLO, HelloMeta()))) return false;
  uint8_t rb[kFrameHeaderBytes];
  if (::recv(fd, rb, sizeof(rb), MSG_WAITALL) != static_cast<ssize_t>(sizeof(rb))) return false;
  auto r = DecodeFrameHeader(rb, FrameLimits());
  if (!r.ok() || r->status != 0) return false;
  std::string meta(r->meta_len, '\0');
  return meta.empty() ||
         ::recv(fd, meta.data(), meta.size(), MSG_WAITALL) == static_cast<ssize_t>(meta.size());
}

// Waits until the server has closed every socket in `fds` (or `within` passes); returns how
// many it closed.
size_t WaitAllClosed(const std::vector<int>& fds, std::chrono::milliseconds within) {
  std::vector<bool> closed(fds.size(), false);
  size_t n = 0;
  auto end = Clock::now() + within;
  while (n < fds.size() && Clock::now() < end) {
    std::vector<pollfd> p;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!closed[i]) p.push_back({fds[i], POLLIN, 0});
    }
    ::poll(p.data(), p.size(), 50);
    for (const pollfd& q : p) {
      if (q.revents == 0) continue;
      char c;
      ssize_t r = ::recv(q.fd, &c, 1, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN)) {
        for (size_t i = 0; i < fds.size(); ++i) {
          if (fds[i] == q.fd) closed[i] = true;
        }
        ++n;
      }
    }
  }
  return n;
}

// VmRSS of this process, in bytes.
uint64_t ResidentBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

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

// Frames that come in one segment are all answered, in order: the server's read-ahead may hold
// the next frame's bytes when it has read one.
TEST_F(ServerTest, FramesSentTogetherAreEachAnswered) {
  int fd = RawConnect();
  ASSERT_TRUE(RawHello(fd));
  std::string frames;
  for (int i = 0; i < 3; ++i) frames += FrameBytes(READ, "");
  ASSERT_TRUE(WriteAll(fd, frames));
  for (int i = 0; i < 3; ++i) {
    uint8_t rb[kFrameHeaderBytes];
    ASSERT_EQ(::recv(fd, rb, sizeof(rb), MSG_WAITALL), static_cast<ssize_t>(sizeof(rb))) << i;
    auto r = DecodeFrameHeader(rb, FrameLimits());
    ASSERT_TRUE(r.ok() && r->is_response() && r->status == 0) << "reply " << i;
    std::string rest(r->meta_len + r->payload_len, '\0');
    ASSERT_TRUE(rest.empty() || ::recv(fd, rest.data(), rest.size(), MSG_WAITALL) ==
                                    static_cast<ssize_t>(rest.size()));
  }
  ::close(fd);
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

// Every read of a frame has a deadline: a peer that stops after any byte of its HELLO (the
// handshake deadline) or of a later frame (the frame deadline), or sends nothing at all after
// its handshake (the idle deadline), is closed.
TEST_F(ServerTest, StallAtEveryByteOfAFrameIsTimedOut) {
  const std::string hello = FrameBytes(HELLO, HelloMeta());
  std::string request = FrameBytes(READ, std::string(40, 'm'));  // 40 bytes of (unparsed) meta
  std::vector<int> fds;
  for (size_t k = 0; k < hello.size(); ++k) {
    int fd = RawConnect();
    ASSERT_TRUE(WriteAll(fd, std::string_view(hello).substr(0, k)));
    fds.push_back(fd);
  }
  for (size_t k = 0; k < request.size(); ++k) {
    int fd = RawConnect();
    ASSERT_TRUE(RawHello(fd)) << "offset " << k;
    ASSERT_TRUE(WriteAll(fd, std::string_view(request).substr(0, k)));
    fds.push_back(fd);
  }
  // Deadlines of 300 and 500 ms: all closed well within 3 s.
  EXPECT_EQ(WaitAllClosed(fds, std::chrono::seconds(3)), fds.size());
  for (int fd : fds) ::close(fd);
  ExpectStillServing();
}

// Every frame restarts the deadlines (the watchdog moves its timer only to earlier times): a
// connection busy for longer than idle_timeout and frame_timeout together stays open, and a
// frame left half sent after that is still closed.
TEST_F(ServerTest, BusyConnectionOutlivesItsTimeoutsAndAStallAfterIsClosed) {
  int fd = RawConnect();
  ASSERT_TRUE(RawHello(fd));
  const std::string hello = FrameBytes(HELLO, HelloMeta());
  const Deadline busy_until = DeadlineAfter(std::chrono::milliseconds(1200));
  int frames = 0;
  while (Clock::now() < busy_until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // A second HELLO is an error reply, not a close: enough to count as a frame.
    ASSERT_TRUE(WriteAll(fd, hello)) << "after " << frames << " frames";
    uint8_t rb[kFrameHeaderBytes];
    ASSERT_EQ(::recv(fd, rb, sizeof(rb), MSG_WAITALL), static_cast<ssize_t>(sizeof(rb)))
        << "closed after " << frames << " frames";
    auto r = DecodeFrameHeader(rb, FrameLimits());
    ASSERT_TRUE(r.ok());
    std::string meta(r->meta_len, '\0');
    if (!meta.empty()) {
      ASSERT_EQ(::recv(fd, meta.data(), meta.size(), MSG_WAITALL),
                static_cast<ssize_t>(meta.size()));
    }
    ++frames;
  }
  ASSERT_TRUE(WriteAll(fd, std::string_view(hello).substr(0, 5)));
  EXPECT_EQ(WaitAllClosed({fd}, std::chrono::seconds(3)), 1u);  // frame_timeout is 300 ms
  ::close(fd);
}

// Pinned, requests round-trip on many connections at once, and the deadlines still close a
// stalled one.
TEST(PinnedServerTest, ConnectionsSpreadOverThreadsServeAndTimeOut) {
  EchoService service;
  ServerOptions o = PinnedOptions(3);
  o.frame_timeout = std::chrono::milliseconds(300);
  Server server(o, &service);
  ASSERT_TRUE(server.Start().ok());
  const Endpoint ep{"127.0.0.1", server.port()};
  std::vector<std::unique_ptr<Connection>> conns;
  for (int i = 0; i < 7; ++i) {
    auto c = Connection::Connect(ep, "pinned", DeadlineAfter(std::chrono::seconds(5)));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    conns.push_back(std::move(c).value());
  }
  for (auto& c : conns) {
    Empty resp;
    std::string bytes = "x";
    iovec out{bytes.data(), bytes.size()};
    ASSERT_TRUE(
        c->Call(WRITE, Empty(), &resp, {&out, 1}, {}, DeadlineAfter(std::chrono::seconds(5))).ok());
  }
  int fd = RawLoopbackSocket(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(RawHello(fd));
  ASSERT_TRUE(WriteAll(fd, FrameBytes(HELLO, HelloMeta()).substr(0, 5)));
  EXPECT_EQ(WaitAllClosed({fd}, std::chrono::seconds(3)), 1u);
  ::close(fd);
  server.Stop();
}

// A header that announces 64 MiB of meta costs memory only as the bytes arrive.
TEST(ServerMemoryTest, AnnouncedMetaIsNotAllocatedBeforeItArrives) {
  EchoService service;
  ServerOptions o;
  o.host = "127.0.0.1";
  o.frame_timeout = std::chrono::seconds(10);
  Server server(o, &service);
  ASSERT_TRUE(server.Start().ok());
  const uint64_t before = ResidentBytes();
  std::vector<int> fds;
  for (int i = 0; i < 8; ++i) {
    int fd = RawLoopbackSocket(server.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(RawHello(fd));
    FrameHeader h;
    h.method = READ;
    h.meta_len = FrameLimits().max_meta_bytes;  // 64 MiB announced
    uint8_t hb[kFrameHeaderBytes];
    EncodeFrameHeader(h, hb);
    ASSERT_TRUE(WriteAll(fd, std::string_view(reinterpret_cast<char*>(hb), sizeof(hb))));
    ASSERT_TRUE(WriteAll(fd, std::string(1000, 'x')));  // and 1000 bytes of it sent
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server.connections(), fds.size());  // all still open, waiting for their meta
  const uint64_t after = ResidentBytes();
  // Allocating what was announced would add 512 MiB.
  EXPECT_LT(after, before + (16u << 20)) << "RSS grew from " << before << " to " << after;
  for (int fd : fds) ::close(fd);
}

// Connections that never finish their handshake cannot lock a real client out: past
// max_handshaking the oldest is closed; past max_connections new ones are closed at once.
TEST(ServerLimitsTest, IdleHandshakesAreCappedAndTheOldestMakeRoom) {
  EchoService service;
  ServerOptions o;
  o.host = "127.0.0.1";
  o.max_handshaking = 16;
  Server server(o, &service);
  ASSERT_TRUE(server.Start().ok());
  std::vector<int> fds;
  fds.reserve(100);
  for (int i = 0; i < 100; ++i) fds.push_back(RawLoopbackSocket(server.port()));
  auto start = Clock::now();
  auto c = Connection::Connect({"127.0.0.1", server.port()}, "real",
                               DeadlineAfter(std::chrono::seconds(2)));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Empty resp;
  EXPECT_TRUE((*c)->Call(READ, Empty(), &resp, DeadlineAfter(std::chrono::seconds(2))).ok());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
  EXPECT_LE(server.handshaking(), 16u);
  // The 84 oldest idle connections were closed (the real client's handshake evicted one more).
  EXPECT_GE(WaitAllClosed(std::vector<int>(fds.begin(), fds.begin() + 84), std::chrono::seconds(2)),
            84u);
  for (int fd : fds) ::close(fd);
}

TEST(ServerLimitsTest, ConnectionsPastTheCapAreClosedAtOnce) {
  EchoService service;
  ServerOptions o;
  o.host = "127.0.0.1";
  o.max_connections = 3;
  Server server(o, &service);
  ASSERT_TRUE(server.Start().ok());
  Endpoint ep{"127.0.0.1", server.port()};
  std::vector<std::unique_ptr<Connection>> held;
  for (int i = 0; i < 3; ++i) {
    auto c = Connection::Connect(ep, "t", DeadlineAfter(std::chrono::seconds(2)));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    held.push_back(std::move(c).value());
  }
  int extra = RawLoopbackSocket(server.port());
  EXPECT_TRUE(PeerClosed(extra));
  ::close(extra);
  held.pop_back();  // one leaves: room for another
  for (int i = 0; i < 50 && server.connections() > 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto c = Connection::Connect(ep, "t", DeadlineAfter(std::chrono::seconds(2)));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
}

}  // namespace
}  // namespace kvpool::rpc

namespace kvpool::rpc {
namespace {

// A non-loopback IPv4 address of this host ("" when it has none).
std::string NonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string out;
  for (ifaddrs* i = list; i != nullptr && out.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    auto* in = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) out = text;
  }
  ::freeifaddrs(list);
  return out;
}

// Sends HELLO to 127.0.0.1:`port` from `source` (a connection the server sees as coming from
// another host: its two ends differ and neither is loopback); returns the reply's status and
// message.
std::pair<int32_t, std::string> HelloFrom(const std::string& source, uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::pair<int32_t, std::string> out{-1, "no reply"};
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) == 0 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0 &&
      WriteAll(fd, FrameBytes(HELLO, HelloMeta()))) {
    uint8_t rb[kFrameHeaderBytes];
    if (::recv(fd, rb, sizeof(rb), MSG_WAITALL) == static_cast<ssize_t>(sizeof(rb))) {
      auto h = DecodeFrameHeader(rb, FrameLimits());
      std::string meta(h.ok() ? h->meta_len : 0, '\0');
      if (h.ok() && (meta.empty() || ::recv(fd, meta.data(), meta.size(), MSG_WAITALL) ==
                                         static_cast<ssize_t>(meta.size()))) {
        ErrorInfo info;
        out = {h->status, h->status != 0 && info.ParseFromString(meta) ? info.message() : ""};
      }
    }
  }
  ::close(fd);
  return out;
}

TEST(ProtectedModeTest, PeersOnThisHostAreToldApartFromOthers) {
  auto a = [](const char* s) { return asio::ip::make_address(s); };
  EXPECT_TRUE(FromThisHost(a("127.0.0.1"), a("127.0.0.1")));
  EXPECT_TRUE(FromThisHost(a("127.0.0.9"), a("10.1.2.3")));  // all of 127/8 is loopback
  EXPECT_TRUE(FromThisHost(a("::1"), a("::1")));
  EXPECT_TRUE(FromThisHost(a("::ffff:127.0.0.1"), a("::ffff:127.0.0.1")));
  EXPECT_TRUE(FromThisHost(a("10.1.2.3"), a("10.1.2.3")));  // to one of its own addresses
  EXPECT_TRUE(FromThisHost(a("::ffff:10.1.2.3"), a("10.1.2.3")));
  EXPECT_FALSE(FromThisHost(a("10.1.2.4"), a("10.1.2.3")));
  EXPECT_FALSE(FromThisHost(a("10.1.2.4"), a("127.0.0.1")));
  EXPECT_FALSE(FromThisHost(a("fd00::7"), a("fd00::2")));
}

// A server with no secret in protected mode serves loopback peers and refuses a peer from
// "another host" (this host's non-loopback address dialling 127.0.0.1) with a reply that says
// how to fix it; with protected mode off (--insecure) the same peer is served.
TEST(ProtectedModeTest, PeersFromOtherHostsGetARefusalThatSaysWhatToDo) {
  const std::string other = NonLoopbackAddress();
  if (other.empty()) GTEST_SKIP() << "this host has no non-loopback IPv4 address to dial from";
  EchoService service;
  for (bool protect : {true, false}) {
    ServerOptions o;
    o.host = "0.0.0.0";
    o.protected_mode = protect;
    o.insecure_hint = "start the master with --insecure";
    Server server(o, &service);
    ASSERT_TRUE(server.Start().ok());
    auto local = Connection::Connect(Endpoint{"127.0.0.1", server.port()}, "local",
                                     DeadlineAfter(std::chrono::seconds(5)));
    EXPECT_TRUE(local.ok()) << local.status().ToString();
    auto [status, message] = HelloFrom(other, server.port());
    if (!protect) {
      EXPECT_EQ(status, 0) << message;
      continue;
    }
    EXPECT_EQ(status, static_cast<int32_t>(ErrorCode::ILLEGAL_CLIENT));
    EXPECT_NE(message.find("protected mode"), std::string::npos) << message;
    EXPECT_NE(message.find("--auth_secret_file"), std::string::npos) << message;
    EXPECT_NE(message.find("start the master with --insecure"), std::string::npos) << message;
    EXPECT_NE(message.find(other), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace kvpool::rpc
