// The TCP limit: a minimal blocking sender (child process) and receiver (the bench) on loopback.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <vector>

#include "common/child_process.h"
#include "tools/bench/limits.h"
#include "tools/bench/payload.h"
#include "tools/bench/pool_launcher.h"
#include "tools/bench/stats.h"

namespace kvpool::tools::bench {
namespace {

constexpr int kSlackSeconds = 10;  // every socket wait: the run's length plus this

struct Header {
  uint64_t page_bytes;
  uint64_t duration_ns;
};

// Closes the descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

void SetTimeouts(int fd, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

bool SendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Reads exactly n bytes; false on EOF, error or timeout.
bool RecvAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, MSG_WAITALL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

Status Failed(const std::string& what, ChildProcess* peer) {
  std::string log = peer != nullptr ? peer->LogTail() : std::string();
  return Status(ErrorCode::RPC_FAIL,
                fmt::format("TCP limit: {} ({}){}{}", what, std::strerror(errno),
                            log.empty() ? "" : "; peer log:\n", log));
}

// A listening socket on 127.0.0.1 with an ephemeral port.
Result<uint16_t> Listen(int fd) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 1) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return Failed("cannot listen on 127.0.0.1", nullptr);
  }
  return ntohs(a.sin_port);
}

// Receives until the peer half-closes; returns the byte count, or nullopt-like -1 on error.
int64_t ReceiveStream(int fd, std::vector<uint8_t>& page) {
  int64_t total = 0;
  for (;;) {
    ssize_t r = ::recv(fd, page.data(), page.size(), MSG_WAITALL);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return total;
    total += r;
  }
}

}  // namespace

Result<LimitFigure> MeasureTcp(uint64_t page_bytes, double seconds) {
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  auto port = Listen(listener.get());
  if (!port.ok()) return port.status();
  auto peer = ChildProcess::StartSelf(
      "tcp peer", {"bench-tcp-peer", "--connect", fmt::format("127.0.0.1:{}", *port)},
      BenchChildOptions());
  if (!peer.ok()) return peer.status();
  pollfd pfd{listener.get(), POLLIN, 0};
  if (::poll(&pfd, 1, kSlackSeconds * 1000) != 1) {
    return Failed("the peer did not connect within 10 s", peer->get());
  }
  Fd conn(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (conn.get() < 0) return Failed("accept failed", peer->get());
  SetTimeouts(conn.get(), static_cast<int>(seconds) + kSlackSeconds);
  Header h{page_bytes, static_cast<uint64_t>(seconds * 1e9)};
  std::vector<uint8_t> page(page_bytes);
  std::memset(page.data(), 0, page.size());
  if (!SendAll(conn.get(), &h, sizeof(h))) return Failed("cannot send the header", peer->get());

  const double cpu0 = ThreadCpuSeconds();
  const auto t0 = BenchClock::now();
  int64_t total = ReceiveStream(conn.get(), page);
  const double elapsed = SecondsSince(t0);
  const double own_cpu = ThreadCpuSeconds() - cpu0;
  if (total <= 0) return Failed("receiving failed", peer->get());
  uint64_t ack = static_cast<uint64_t>(total);
  if (!SendAll(conn.get(), &ack, sizeof(ack))) return Failed("cannot send the count", peer->get());
  if (!(*peer)->WaitExit(std::chrono::seconds(kSlackSeconds)) || (*peer)->exit_status() != 0) {
    return Failed(
        fmt::format("the peer did not finish cleanly (status {})", (*peer)->exit_status()),
        peer->get());
  }
  const double gb = static_cast<double>(total) / 1e9;
  return LimitFigure{gb / elapsed, (own_cpu + (*peer)->CpuSeconds()) / gb};
}

int RunTcpPeer(const TcpPeerOptions& options) {
  auto colon = options.connect.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (colon == std::string::npos ||
      ::inet_pton(AF_INET, options.connect.substr(0, colon).c_str(), &a.sin_addr) != 1) {
    std::cerr << "bench-tcp-peer: --connect wants IP:PORT, got '" << options.connect << "'\n";
    return 2;
  }
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(options.connect.substr(colon + 1))));
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  SetTimeouts(fd.get(), kSlackSeconds);
  Header h{};
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      !RecvAll(fd.get(), &h, sizeof(h)) || h.page_bytes == 0 || h.page_bytes % 8 != 0) {
    std::cerr << "bench-tcp-peer: cannot reach the bench or bad header: " << std::strerror(errno)
              << "\n";
    return 1;
  }
  SetTimeouts(fd.get(), static_cast<int>(h.duration_ns / 1000000000ULL) + kSlackSeconds);
  std::vector<uint64_t> page(h.page_bytes / 8);
  PagePattern(h.page_bytes, 1).Fill(page.data(), 0);
  uint64_t sent = 0;
  const auto t0 = BenchClock::now();
  const auto duration = std::chrono::nanoseconds(h.duration_ns);
  while (BenchClock::now() - t0 < duration) {
    if (!SendAll(fd.get(), page.data(), h.page_bytes)) {
      std::cerr << "bench-tcp-peer: send failed: " << std::strerror(errno) << "\n";
      return 1;
    }
    sent += h.page_bytes;
  }
  ::shutdown(fd.get(), SHUT_WR);
  uint64_t counted = 0;
  if (!RecvAll(fd.get(), &counted, sizeof(counted)) || counted != sent) {
    std::cerr << fmt::format("bench-tcp-peer: sent {} bytes, the bench counted {}\n", sent,
                             counted);
    return 1;
  }
  return 0;
}

}  // namespace kvpool::tools::bench
