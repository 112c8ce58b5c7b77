// The TCP limit: minimal blocking senders (a child process) and receivers (the bench) on loopback,
// one thread per stream at each end.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/child_process.h"
#include "common/first_touch.h"
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
Result<uint16_t> Listen(int fd, int backlog) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return Failed("cannot listen on 127.0.0.1", nullptr);
  }
  return ntohs(a.sin_port);
}

// Receives until the peer half-closes, page by page into the pages of `dst` in turn (like a
// get filling a batch's destination pages); returns the byte count, or -1 on error.
int64_t ReceiveStream(int fd, uint64_t page_bytes, std::span<uint8_t> dst) {
  const uint64_t pages = std::max<uint64_t>(1, dst.size() / page_bytes);
  int64_t total = 0;
  for (uint64_t slot = 0;; slot = (slot + 1) % pages) {
    uint8_t* page = dst.data() + slot * page_bytes;
    ssize_t r = 0;
    do {
      r = ::recv(fd, page, page_bytes, MSG_WAITALL);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return -1;
    if (r == 0) return total;
    total += r;
  }
}

// One stream's share of the destination: `streams` equal slices of whole pages (the whole of
// `dst` for each when it holds fewer pages than streams).
std::span<uint8_t> SliceFor(std::span<uint8_t> dst, uint64_t page_bytes, int streams, int i) {
  const uint64_t per = dst.size() / page_bytes / static_cast<uint64_t>(streams);
  if (per == 0) return dst;
  return dst.subspan(static_cast<uint64_t>(i) * per * page_bytes, per * page_bytes);
}

// The sending end of one stream: reads the header, sends the pages of its source in turn for its
// duration (like a node sending a batch from its segment), half-closes and checks the
// receiver's count. Returns an empty string or what went wrong.
std::string SendStream(const sockaddr_in& to, uint64_t page_bytes,
                       std::span<const uint64_t> source) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  SetTimeouts(fd.get(), kSlackSeconds);
  Header h{};
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0 ||
      !RecvAll(fd.get(), &h, sizeof(h)) || h.page_bytes != page_bytes) {
    return fmt::format("cannot reach the bench or bad header: {}", std::strerror(errno));
  }
  SetTimeouts(fd.get(), static_cast<int>(h.duration_ns / 1000000000ULL) + kSlackSeconds);
  const uint64_t words = page_bytes / 8;
  const uint64_t pages = source.size() / words;
  uint64_t sent = 0;
  const auto t0 = BenchClock::now();
  const auto duration = std::chrono::nanoseconds(h.duration_ns);
  for (uint64_t slot = 0; BenchClock::now() - t0 < duration; slot = (slot + 1) % pages) {
    if (!SendAll(fd.get(), &source[slot * words], h.page_bytes)) {
      return fmt::format("send failed: {}", std::strerror(errno));
    }
    sent += h.page_bytes;
  }
  ::shutdown(fd.get(), SHUT_WR);
  uint64_t counted = 0;
  if (!RecvAll(fd.get(), &counted, sizeof(counted)) || counted != sent) {
    return fmt::format("sent {} bytes, the bench counted {}", sent, counted);
  }
  return {};
}

}  // namespace

Result<LimitFigure> MeasureTcp(uint64_t page_bytes, std::span<uint8_t> dst, int streams,
                               double seconds) {
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  auto port = Listen(listener.get(), streams);
  if (!port.ok()) return port.status();
  const std::span<uint8_t> slice = SliceFor(dst, page_bytes, streams, 0);
  auto peer = ChildProcess::StartSelf(
      "tcp peer",
      {"bench-tcp-peer", "--connect", fmt::format("127.0.0.1:{}", *port), "--streams",
       std::to_string(streams), "--page_bytes", std::to_string(page_bytes), "--source_bytes",
       std::to_string(slice.size())},
      BenchChildOptions());
  if (!peer.ok()) return peer.status();
  std::vector<std::unique_ptr<Fd>> conns;
  for (int i = 0; i < streams; ++i) {
    pollfd pfd{listener.get(), POLLIN, 0};
    if (::poll(&pfd, 1, kSlackSeconds * 1000) != 1) {
      return Failed("the peer did not connect within 10 s", peer->get());
    }
    conns.push_back(
        std::make_unique<Fd>(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC)));
    if (conns.back()->get() < 0) return Failed("accept failed", peer->get());
    SetTimeouts(conns.back()->get(), static_cast<int>(seconds) + kSlackSeconds);
  }
  // Every sender fills its source before it connects: what the peer has used by now is its
  // start-up and fill, not sending.
  const double peer_cpu0 = (*peer)->CpuSeconds();
  const Header h{page_bytes, static_cast<uint64_t>(seconds * 1e9)};
  std::vector<int64_t> received(conns.size(), 0);
  std::vector<double> cpu(conns.size(), 0);
  const auto t0 = BenchClock::now();
  for (const auto& c : conns) {
    if (!SendAll(c->get(), &h, sizeof(h))) return Failed("cannot send the header", peer->get());
  }
  {
    std::vector<std::jthread> receivers;
    for (size_t i = 0; i < conns.size(); ++i) {
      receivers.emplace_back([&, i] {
        const double cpu0 = ThreadCpuSeconds();
        received[i] = ReceiveStream(conns[i]->get(), page_bytes,
                                    SliceFor(dst, page_bytes, streams, static_cast<int>(i)));
        cpu[i] = ThreadCpuSeconds() - cpu0;
      });
    }
  }  // joins every receiver
  const double elapsed = SecondsSince(t0);
  int64_t total = 0;
  for (size_t i = 0; i < conns.size(); ++i) {
    if (received[i] <= 0) return Failed(fmt::format("receiving stream {} failed", i), peer->get());
    const uint64_t ack = static_cast<uint64_t>(received[i]);
    if (!SendAll(conns[i]->get(), &ack, sizeof(ack))) {
      return Failed("cannot send the count", peer->get());
    }
    total += received[i];
  }
  if (!(*peer)->WaitExit(std::chrono::seconds(kSlackSeconds)) || (*peer)->exit_status() != 0) {
    return Failed(
        fmt::format("the peer did not finish cleanly (status {})", (*peer)->exit_status()),
        peer->get());
  }
  double own_cpu = 0;
  for (double c : cpu) own_cpu += c;
  const double gb = static_cast<double>(total) / 1e9;
  return LimitFigure{gb / elapsed, (own_cpu + (*peer)->CpuSeconds() - peer_cpu0) / gb, streams};
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
  if (options.page_bytes % 8 != 0) {
    std::cerr << "bench-tcp-peer: --page_bytes must be a multiple of 8\n";
    return 2;
  }
  // Each stream's source is filled (and so faulted in) before it connects: the bench times
  // from the header on.
  const uint64_t words = options.page_bytes / 8;
  const uint64_t pages = std::max<uint64_t>(1, options.source_bytes / options.page_bytes);
  std::vector<std::string> errors(static_cast<size_t>(options.streams));
  {
    std::vector<std::jthread> senders;
    for (size_t i = 0; i < errors.size(); ++i) {
      senders.emplace_back([&, i] {
        std::vector<uint64_t> source(pages * words);
        // The kernel reads the source on every send: its first touches are paid here, as an
        // engine's long-lived buffers have paid theirs (common/first_touch.h).
        (void)ZeroByKernel(source.data(), source.size() * sizeof(uint64_t));
        for (uint64_t p = 0; p < pages; ++p) {
          PagePattern(options.page_bytes, 1).Fill(&source[p * words], p);
        }
        errors[i] = SendStream(a, options.page_bytes, source);
      });
    }
  }  // joins every sender
  int exit_code = 0;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (errors[i].empty()) continue;
    std::cerr << fmt::format("bench-tcp-peer: stream {}: {}\n", i, errors[i]);
    exit_code = 1;
  }
  return exit_code;
}

}  // namespace kvpool::tools::bench
