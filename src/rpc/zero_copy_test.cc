#include "rpc/zero_copy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "rpc/unique_fd.h"

namespace kvpool::rpc {
namespace {

// A connected loopback TCP pair: {sender, receiver}.
std::pair<UniqueFd, UniqueFd> TcpPair() {
  UniqueFd listener(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), len), 0);
  EXPECT_EQ(listen(listener.get(), 1), 0);
  EXPECT_EQ(getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  UniqueFd sender(socket(AF_INET, SOCK_STREAM, 0));
  EXPECT_EQ(connect(sender.get(), reinterpret_cast<sockaddr*>(&addr), len), 0);
  UniqueFd receiver(accept(listener.get(), nullptr, nullptr));
  return {std::move(sender), std::move(receiver)};
}

TEST(ZeroCopySendsTest, SmallSendsAndAZeroThresholdNeverAsk) {
  auto [sender, receiver] = TcpPair();
  ZeroCopySends off(0);
  EXPECT_EQ(off.FlagsFor(sender.get(), 1 << 20), 0);
  ZeroCopySends sends(64 * 1024);
  EXPECT_EQ(sends.FlagsFor(sender.get(), 64 * 1024 - 1), 0);
  EXPECT_FALSE(sends.off());  // nothing asked of the socket yet
}

TEST(ZeroCopySendsTest, ASocketThatRefusesZeroCopyIsNeverAskedAgain) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  UniqueFd a(fds[0]);
  UniqueFd b(fds[1]);
  ZeroCopySends sends(1);
  EXPECT_EQ(sends.FlagsFor(a.get(), 1 << 20), 0);
  EXPECT_TRUE(sends.off());
}

// Every byte arrives as sent; the completions are reaped; and on loopback, where the kernel
// copies anyway and says so, the socket stops asking.
TEST(ZeroCopySendsTest, LoopbackBytesArriveExactAndTheKernelsCopyTurnsItOff) {
  auto [sender, receiver] = TcpPair();
  constexpr size_t kBytes = 8u << 20;
  std::vector<uint8_t> out(kBytes);
  for (size_t i = 0; i < kBytes; ++i) out[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  std::vector<uint8_t> in(kBytes);
  std::thread reader([&, fd = receiver.get()] {
    for (size_t got = 0; got < kBytes;) {
      const ssize_t n = recv(fd, in.data() + got, kBytes - got, 0);
      if (n <= 0) return;
      got += static_cast<size_t>(n);
    }
  });
  ZeroCopyCounters counters;
  ZeroCopySends sends(64 * 1024, &counters);
  size_t sent = 0;
  uint64_t asked = 0;
  while (sent < kBytes) {
    const size_t piece = std::min<size_t>(256 * 1024, kBytes - sent);
    int flags = sends.FlagsFor(sender.get(), piece);
    ssize_t n = send(sender.get(), out.data() + sent, piece, flags);
    if (n < 0 && errno == ENOBUFS && flags != 0) {
      flags = sends.AfterNoBuffers(sender.get());
      n = send(sender.get(), out.data() + sent, piece, flags);
    }
    ASSERT_GT(n, 0) << strerror(errno);
    sends.Sent(flags);
    asked += flags != 0 ? 1 : 0;
    sent += static_cast<size_t>(n);
  }
  reader.join();
  EXPECT_EQ(in, out);
  if (asked == 0) GTEST_SKIP() << "this kernel refused SO_ZEROCOPY: nothing more to check";
  EXPECT_EQ(sends.zero_copy_sends(), asked);
  // Completions come once the receiver has the bytes: reap until none is left (bounded).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (sends.outstanding() > 0 && std::chrono::steady_clock::now() < until) {
    pollfd p{sender.get(), 0, 0};
    (void)poll(&p, 1, 100);  // POLLERR: the error queue holds completions
    sends.Reap(sender.get());
  }
  EXPECT_EQ(sends.outstanding(), 0u);
  EXPECT_TRUE(sends.off()) << "loopback copies: the kernel's completions say so";
  EXPECT_LT(asked, 32u) << "the socket kept asking after the kernel said it copied";
  EXPECT_EQ(counters.sends.load(), asked);
  EXPECT_EQ(counters.copied_off.load(), 1u);
}

}  // namespace
}  // namespace kvpool::rpc
