// How a pinned server's threads poll for the requests its replies announce (Reply::
// next_request_within, next_request_after).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/uio.h>

#include <memory>
#include <string>
#include <thread>

#include "common/spin_wait.h"
#include "rpc/connection.h"
#include "rpc/echo_service_test_util.h"
#include "rpc/kvpool.pb.h"
#include "rpc/server.h"

namespace kvpool::rpc {
namespace {

// Sends "call <i>" as a WRITE on `c`: true when it was answered OK and `service` holds it.
bool WriteCall(Connection& c, const EchoService& service, int i) {
  Empty resp;
  std::string bytes = "call " + std::to_string(i);
  iovec out{bytes.data(), bytes.size()};
  const Status st =
      c.Call(WRITE, Empty(), &resp, {&out, 1}, {}, DeadlineAfter(std::chrono::seconds(5)));
  EXPECT_TRUE(st.ok()) << st.ToString();
  return st.ok() && service.stored_ == bytes;
}

// A reply that announces the peer's next request (Reply::next_request_within, the master's
// PUT_START) keeps its thread polling for it: the requests that follow are served on the polling
// thread, and the server still stops at once while a poll is announced for seconds.
class AnnouncingService : public EchoService {
 public:
  asio::awaitable<Reply> Handle(const FrameHeader& h, std::string_view meta,
                                PayloadReader& payload) override {
    Reply r = co_await EchoService::Handle(h, meta, payload);
    r.next_request_within = std::chrono::seconds(5);  // capped at kMaxSpinMicros
    co_return r;
  }
};

TEST(PinnedServerTest, AnAnnouncedRequestIsPolledForAndStopStillEndsThePoll) {
  AnnouncingService service;
  ServerOptions o = PinnedOptions(1);
  o.idle_spin = std::chrono::microseconds(50);
  auto server = std::make_unique<Server>(o, &service);
  ASSERT_TRUE(server->Start().ok());
  auto c = Connection::Connect({"127.0.0.1", server->port()}, "announced",
                               DeadlineAfter(std::chrono::seconds(5)));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(WriteCall(**c, service, i));
  const auto before = Clock::now();
  server->Stop();  // while the thread polls for the request announced last
  EXPECT_LT(Clock::now() - before, std::chrono::seconds(2));
}

// A reply that says its peer's next request is far off (Reply::next_request_after, the master's
// GET_REPLICA_LIST before a long read) ends its thread's idle poll: across calls spaced 20 ms
// apart, a server polling 10 ms after each handler burns that CPU without the hint and next to
// none with it. Both run here, the same calls, so the machine's load weighs on both alike.
class FarService : public EchoService {
 public:
  asio::awaitable<Reply> Handle(const FrameHeader& h, std::string_view meta,
                                PayloadReader& payload) override {
    Reply r = co_await EchoService::Handle(h, meta, payload);
    r.next_request_after = std::chrono::seconds(1);
    co_return r;
  }
};

std::chrono::microseconds ProcessCpu() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
  };
  return std::chrono::duration_cast<std::chrono::microseconds>(us(u.ru_utime) + us(u.ru_stime));
}

// CPU the process spends across 10 calls to `service`, 20 ms apart, with a 10 ms idle poll.
std::chrono::microseconds CpuOfSpacedCalls(EchoService& service) {
  ServerOptions o = PinnedOptions(1);
  o.idle_spin = std::chrono::microseconds(kMaxSpinMicros);
  Server server(o, &service);
  EXPECT_TRUE(server.Start().ok());
  auto c = Connection::Connect({"127.0.0.1", server.port()}, "spaced",
                               DeadlineAfter(std::chrono::seconds(5)));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return {};
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the accept's poll ends
  const auto before = ProcessCpu();
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(WriteCall(**c, service, i));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ProcessCpu() - before;
}

TEST(PinnedServerTest, AReplyWhosePeerAsksLateEndsTheIdlePoll) {
  EchoService plain;
  FarService far;
  const auto polled = CpuOfSpacedCalls(plain);
  const auto hinted = CpuOfSpacedCalls(far);
  // 10 polls of 10 ms: tens of ms of CPU even on a loaded machine (a yielding poll still runs
  // between the other threads); the hinted server sleeps at once after each reply.
  RecordProperty("polled_us", std::to_string(polled.count()));
  RecordProperty("hinted_us", std::to_string(hinted.count()));
  EXPECT_GT(polled, std::chrono::milliseconds(20));
  EXPECT_LT(hinted * 3, polled) << "hinted " << hinted.count() << " us, polled " << polled.count()
                                << " us";
}

}  // namespace
}  // namespace kvpool::rpc
