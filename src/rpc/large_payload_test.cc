// Large payloads through rpc::Server and rpc::Connection: the receive low-water mark on both
// ends (rpc/receive_low_water.h) and the server's zero-copy replies (rpc/zero_copy.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rpc/connection.h"
#include "rpc/echo_service_test_util.h"
#include "rpc/receive_low_water.h"
#include "rpc/server.h"

namespace kvpool::rpc {
namespace {

constexpr size_t kBig = 6u << 20;  // several low-water marks, with a remainder

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 131 + seed + (i >> 16));
  return s;
}

// Streams `bytes` in 64 KiB parts, part i ready (i + 1) x `pause` after the reply was made: a
// slow link. It never calls NotifyReady's wake: its parts are ready exactly at ReadyBy.
class TrickleSource : public PayloadSource {
 public:
  TrickleSource(std::string bytes, std::chrono::milliseconds pause)
      : bytes_(std::move(bytes)), pause_(pause) {}
  size_t parts() const override { return (bytes_.size() + kPart - 1) / kPart; }
  uint64_t bytes() const override { return bytes_.size(); }
  size_t Ready(size_t from) override {
    size_t n = 0;
    while (from + n < parts() && ReadyBy(from + n) <= Clock::now()) ++n;
    return n;
  }
  size_t WaitReady(size_t from) override {
    std::this_thread::sleep_until(ReadyBy(from));
    return Ready(from);
  }
  Deadline ReadyBy(size_t from) const override {
    return start_ + pause_ * static_cast<int64_t>(from + 1);
  }
  void NotifyReady(size_t /*from*/, std::function<void()> /*wake*/) override {}
  asio::const_buffer Part(size_t i) const override {
    const size_t at = i * kPart;
    return asio::buffer(bytes_.data() + at, std::min(kPart, bytes_.size() - at));
  }

 private:
  static constexpr size_t kPart = 64 * 1024;
  const std::string bytes_;
  const std::chrono::milliseconds pause_;
  const Deadline start_ = Clock::now();
};

// The echo service, its READs zero-copy where the kernel can; method 99 streams the stored
// bytes slowly.
class BigService : public EchoService {
 public:
  BigService() { stable_reads_ = true; }
  asio::awaitable<Reply> Handle(const FrameHeader& h, std::string_view meta,
                                PayloadReader& payload) override {
    if (h.method != 99) co_return co_await EchoService::Handle(h, meta, payload);
    Reply r = Reply::Of(Empty());
    r.source = std::make_shared<TrickleSource>(stored_, std::chrono::milliseconds(25));
    co_return r;
  }
};

class LargePayloadTest : public ::testing::Test {
 protected:
  void SetUp() override { Serve(ServerOptions()); }
  void Serve(ServerOptions o) {
    server_.reset();
    o.host = "127.0.0.1";
    o.limits.max_payload_bytes = 64 << 20;
    o.zero_copy_min_bytes = 64 * 1024;
    server_ = std::make_unique<Server>(o, &service_);
    ASSERT_TRUE(server_->Start().ok());
    ep_ = Endpoint{"127.0.0.1", server_->port()};
  }
  static Deadline Soon() { return DeadlineAfter(std::chrono::seconds(20)); }

  BigService service_;
  std::unique_ptr<Server> server_;
  Endpoint ep_;
};

TEST_F(LargePayloadTest, LargeWritesAndZeroCopyReadsRoundTripExact) {
  ConnectOptions co;
  co.zero_copy_min_bytes = 1;  // every send of this client asks for zero-copy
  auto c = Connection::Connect(ep_, "t", Soon(), co);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int round = 0; round < 3; ++round) {
    const std::string out = Pattern(kBig + static_cast<size_t>(round) * 4097, round);
    iovec o[2] = {{const_cast<char*>(out.data()), 1000},
                  {const_cast<char*>(out.data()) + 1000, out.size() - 1000}};
    Empty resp;
    ASSERT_TRUE((*c)->Call(WRITE, Empty(), &resp, o, {}, Soon()).ok());
    ASSERT_EQ(service_.stored_, out);
    std::string in(out.size(), '\0');
    iovec i[2] = {{in.data(), 3 << 20}, {in.data() + (3 << 20), in.size() - (3 << 20)}};
    ASSERT_TRUE((*c)->Call(READ, Empty(), &resp, {}, i, Soon()).ok());
    EXPECT_EQ(in, out) << "round " << round;
  }
}

// Payloads are read with the mark from ReceiveLowWater::kMinPayload on (a put's 4 x 256 KiB at
// a node): sizes around that bound and kSmallReplyPayload, sent whole and sent in pieces with
// pauses between them (the mark must never wait for more than is left), arrive exact, and read
// back exact through a reply.
TEST_F(LargePayloadTest, PayloadsAroundTheLowWaterBoundsArriveWholeEvenWhenSentSlowly) {
  auto c = Connection::Connect(ep_, "t", Soon());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const uint64_t min = ReceiveLowWater::kMinPayload;
  const uint64_t small_reply = ReceiveLowWater::kSmallReplyPayload;
  const std::vector<uint64_t> sizes = {min - 1, min, (1u << 20) + 4097, small_reply - 1,
                                       small_reply};
  for (size_t n = 0; n < sizes.size(); ++n) {
    for (bool slowly : {false, true}) {
      const std::string out = Pattern(sizes[n], static_cast<int>(n));
      iovec o{const_cast<char*>(out.data()), out.size()};
      // Four pieces, 20 ms apart when slowly: the server waits on a partly arrived payload.
      const std::vector<uint64_t> marks = {0, out.size() / 4, out.size() / 2, out.size() * 3 / 4};
      const std::function<void(size_t)> pause = [&](size_t k) {
        if (slowly && k > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      };
      const PayloadPieces pieces{marks, &pause};
      Empty resp;
      Status st = (*c)->Call(WRITE, Empty(), &resp, {&o, 1}, {}, Soon(), &pieces);
      ASSERT_TRUE(st.ok()) << sizes[n] << " bytes, slowly=" << slowly << ": " << st.ToString();
      ASSERT_EQ(service_.stored_, out) << sizes[n] << " bytes, slowly=" << slowly;
      std::string in(out.size(), '\0');
      iovec i{in.data(), in.size()};
      ASSERT_TRUE((*c)->Call(READ, Empty(), &resp, {}, {&i, 1}, Soon()).ok());
      ASSERT_EQ(in, out) << sizes[n] << " bytes read back, slowly=" << slowly;
    }
  }
}

// A reply that trickles in below the low-water mark is still progress: a connection that gives
// up on a peer silent for 300 ms does not give up on one that sends 64 KiB every 25 ms.
TEST_F(LargePayloadTest, ASlowReplyBelowTheLowWaterMarkIsNotASilentPeer) {
  auto c = Connection::Connect(ep_, "t", Soon());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::string out = Pattern(2u << 20, 7);  // 2 marks: the mark is used
  iovec o{const_cast<char*>(out.data()), out.size()};
  Empty resp;
  ASSERT_TRUE((*c)->Call(WRITE, Empty(), &resp, {&o, 1}, {}, Soon()).ok());
  (*c)->set_stall_timeout(std::chrono::milliseconds(300));
  std::string in(out.size(), '\0');
  iovec i{in.data(), in.size()};
  const auto start = std::chrono::steady_clock::now();
  Status st = (*c)->Call(static_cast<Method>(99), Empty(), &resp, {}, {&i, 1}, Soon());
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(in, out);
  EXPECT_GT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

// A data server pins each connection to one thread (ServerOptions::pin_connections): a reply
// still waiting for its source must not hold that thread, or every other connection on it would
// wait the whole stream out.
TEST_F(LargePayloadTest, AStreamedReplyThatWaitsDoesNotHoldTheOtherConnectionsOfItsThread) {
  ServerOptions o;
  o.threads = 1;
  o.pin_connections = true;
  Serve(o);
  auto slow = Connection::Connect(ep_, "slow", Soon());
  auto quick = Connection::Connect(ep_, "quick", Soon());
  ASSERT_TRUE(slow.ok() && quick.ok());
  const std::string out = Pattern(1u << 20, 3);  // 16 parts, 25 ms apart: 400 ms
  iovec o_iov{const_cast<char*>(out.data()), out.size()};
  Empty resp;
  ASSERT_TRUE((*quick)->Call(WRITE, Empty(), &resp, {&o_iov, 1}, {}, Soon()).ok());
  std::atomic<bool> slow_done{false};
  std::string in(out.size(), '\0');
  std::thread streamer([&] {
    iovec i{in.data(), in.size()};
    Empty r;
    EXPECT_TRUE((*slow)->Call(static_cast<Method>(99), Empty(), &r, {}, {&i, 1}, Soon()).ok());
    slow_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // the stream is under way
  for (int k = 0; k < 5; ++k) {
    std::string echo(out.size(), '\0');
    iovec e{echo.data(), echo.size()};
    ASSERT_TRUE((*quick)->Call(READ, Empty(), &resp, {}, {&e, 1}, Soon()).ok());
    EXPECT_EQ(echo, out);
  }
  EXPECT_FALSE(slow_done.load()) << "the other connection waited for the stream to end";
  streamer.join();
  EXPECT_EQ(in, out);
}

}  // namespace
}  // namespace kvpool::rpc
