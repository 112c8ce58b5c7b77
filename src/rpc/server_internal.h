// The parts of rpc::Server that its two source files share (server.cc: start, stop, admission,
// the accept loop; server_session.cc: one connection's conversation): I/O helpers, the two
// stream kinds and the types of a connection's bookkeeping. Private to src/rpc.
#pragma once

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/experimental/as_tuple.hpp>
#include <asio/ssl.hpp>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "rpc/server.h"
#include "rpc/zero_copy.h"

// asio's coroutine frames come from its own recycling operator new and go back through the
// matching operator delete; gcc 12 cannot see that the two match and warns at the end of every
// member coroutine (-Wmismatched-new-delete). A false positive: silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace kvpool::rpc {
namespace server_detail {

inline constexpr auto kUseTuple = asio::experimental::as_tuple(asio::use_awaitable);

// asio::async_read / async_write move at most 64 KiB per system call by default
// (default_max_transfer_size). A READ of a batch is tens of MiB: at that size the per-call cost
// and the epoll round trip after each short write took a third of the node's time. This
// condition lets each readv / writev take as much as the socket buffer holds.
inline constexpr size_t kMaxBytesPerCall = size_t{64} << 20;
inline size_t TransferAllInLargeCalls(const asio::error_code& ec, size_t /*transferred*/) {
  return ec ? 0 : kMaxBytesPerCall;
}
// Drops the first `n` bytes of buffers[first..] (a partial read or write) and returns the index
// of the first buffer with bytes left.
template <typename Buffer>
size_t Consume(std::vector<Buffer>& buffers, size_t first, size_t n) {
  while (n > 0 && first < buffers.size()) {
    const size_t k = std::min(n, buffers[first].size());
    buffers[first] += k;
    n -= k;
    if (buffers[first].size() == 0) ++first;
  }
  return first;
}
// Before a connection has authenticated, a frame's meta is at most this (a HELLO or AUTH is
// ~100 bytes): an anonymous peer cannot make the server allocate more.
inline constexpr uint32_t kMaxHandshakeMetaBytes = 4096;
inline constexpr const char* kAuthFailed = "authentication failed";
// Metadata is read in pieces of at least this much, each no larger than what has arrived so
// far: a header that announces 64 MiB costs memory only as the bytes come.
inline constexpr size_t kMetaChunkBytes = 64 * 1024;
// A connection's metadata buffer is kept between frames up to this capacity (reused), and
// freed after a larger frame.
inline constexpr size_t kKeptMetaBytes = 1 << 20;

inline asio::ip::address Unmapped(const asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  }
  return a;
}

inline bool SocketFromThisHost(const asio::ip::tcp::socket& s) {
  asio::error_code ec1, ec2;
  auto peer = s.remote_endpoint(ec1);
  auto local = s.local_endpoint(ec2);
  if (ec1 || ec2) return false;
  return FromThisHost(peer.address(), local.address());
}

inline bool SocketFromLoopback(const asio::ip::tcp::socket& s) {
  asio::error_code ec;
  auto peer = s.remote_endpoint(ec);
  return !ec && Unmapped(peer.address()).is_loopback();
}

inline std::string PeerName(const asio::ip::tcp::socket& s) {
  asio::error_code ec;
  auto ep = s.remote_endpoint(ec);
  if (ec) return "unknown peer";
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

inline std::string SubjectOf(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  char buf[512];
  X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof(buf));
  X509_free(cert);
  return buf;
}

}  // namespace server_detail

using server_detail::Consume;
using server_detail::kUseTuple;
using server_detail::TransferAllInLargeCalls;

// The two stream kinds live in a named namespace: coroutine frames of Server's members hold them,
// and gcc warns (-Wsubobject-linkage) when such a frame has a field of an internal-linkage type.
namespace server_streams {

// Plain TCP: gathered writes and scattered reads straight on the socket.
//
// With read-ahead (ServerOptions::read_ahead), a small read (a frame's header) takes up to
// kReadAheadBytes of what has arrived, so that a request's header and meta, sent together, come
// in one system call instead of two; later reads take the rest from there first. Up to
// kReadAheadBytes of a payload are then copied once more; the rest of it is read straight into
// its destination.
class PlainStream : public ServerStream {
 public:
  static constexpr size_t kReadAheadBytes = 4096;

  // `read_ahead`: see ServerOptions::read_ahead (off: every read goes straight to the socket).
  explicit PlainStream(asio::ip::tcp::socket& socket, uint64_t zero_copy_min_bytes = 0,
                       ZeroCopyCounters* zero_copy_counters = nullptr, bool read_ahead = false)
      : socket_(socket),
        zero_copy_(zero_copy_min_bytes, zero_copy_counters),
        read_ahead_(read_ahead) {}
  asio::awaitable<IoResult> ReadAll(const std::vector<asio::mutable_buffer>& buffers) override;
  asio::awaitable<IoResult> ReadSome(asio::mutable_buffer buffer) override;
  asio::awaitable<IoResult> WriteAll(const std::vector<asio::const_buffer>& buffers) override {
    co_return co_await asio::async_write(socket_, buffers, TransferAllInLargeCalls, kUseTuple);
  }
  asio::awaitable<IoResult> WriteAllZeroCopy(
      const std::vector<asio::const_buffer>& buffers) override;
  void Close() override {
    asio::error_code ignored;
    socket_.close(ignored);
  }

 private:
  // Copies read-ahead bytes into `buffer`; returns how many.
  size_t TakeAhead(asio::mutable_buffer buffer);

  asio::ip::tcp::socket& socket_;
  ZeroCopySends zero_copy_;
  bool read_ahead_;
  std::unique_ptr<char[]> ahead_;  // kReadAheadBytes, allocated by the first small read
  size_t ahead_from_ = 0;          // bytes of ahead_ not yet taken: [ahead_from_, ahead_to_)
  size_t ahead_to_ = 0;
};

class TlsStream : public ServerStream {
 public:
  TlsStream(asio::ip::tcp::socket socket, asio::ssl::context& ctx) : ssl_(std::move(socket), ctx) {}
  asio::ssl::stream<asio::ip::tcp::socket>& ssl() { return ssl_; }
  asio::awaitable<IoResult> ReadAll(const std::vector<asio::mutable_buffer>& buffers) override {
    co_return co_await asio::async_read(ssl_, buffers, kUseTuple);
  }
  asio::awaitable<IoResult> ReadSome(asio::mutable_buffer buffer) override {
    co_return co_await ssl_.async_read_some(buffer, kUseTuple);
  }
  asio::awaitable<IoResult> WriteAll(const std::vector<asio::const_buffer>& buffers) override {
    co_return co_await asio::async_write(ssl_, buffers, kUseTuple);
  }
  void Close() override {
    asio::error_code ignored;
    ssl_.lowest_layer().close(ignored);
  }

 private:
  asio::ssl::stream<asio::ip::tcp::socket> ssl_;
};

}  // namespace server_streams

using server_streams::PlainStream;
using server_streams::TlsStream;

// Closes a connection's stream when its deadline passes (a connection that stalls mid-frame
// or mid-handshake, or stays silent too long). Used on the connection's strand only.
class Server::Watchdog {
 public:
  // `name` and `peer` must outlive the watchdog.
  Watchdog(const asio::any_io_executor& executor, ServerStream& stream, const std::string& name,
           const std::string& peer)
      : timer_(executor), state_(std::make_shared<State>()), name_(name), peer_(peer) {
    state_->stream = &stream;
  }
  ~Watchdog() { state_->stream = nullptr; }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // (Re)starts the deadline; `what` (a literal) ends the log line ("handshake not completed in
  // time"). Every frame restarts it, and resetting a timer is a system call when it becomes the
  // earliest one, so the timer is only moved to an earlier time: a timer that goes off before
  // the deadline sets itself for the deadline.
  void Arm(Clock::duration timeout, const char* what) {
    state_->deadline = Clock::now() + timeout;
    state_->what = what;
    state_->armed = true;
    if (state_->waiting && timer_.expiry() <= state_->deadline) return;
    Wait(state_->deadline);
  }
  // Until the next Arm, nothing is closed (a pending timer goes off and does nothing).
  void Cancel() { state_->armed = false; }

 private:
  struct State {
    ServerStream* stream = nullptr;
    Deadline deadline{};
    const char* what = "";
    bool armed = false;
    bool waiting = false;  // the wait numbered `wait` is pending
    uint64_t wait = 0;
  };

  void Wait(Deadline at) {
    const uint64_t number = ++state_->wait;
    state_->waiting = true;
    timer_.expires_at(at);  // cancels an earlier wait, whose handler then does nothing
    timer_.async_wait([state = state_, number, this](const asio::error_code& e) {
      // `this` is alive while state->stream is set (the destructor clears it).
      if (e || state->stream == nullptr || state->wait != number) return;
      state->waiting = false;
      if (!state->armed) return;
      if (Clock::now() < state->deadline) {
        Wait(state->deadline);
        return;
      }
      spdlog::warn("{}: closing connection from {}: {}", name_, peer_, state->what);
      state->stream->Close();
    });
  }

  asio::steady_timer timer_;
  std::shared_ptr<State> state_;
  const std::string& name_;
  const std::string& peer_;
};

// A connection's entry in the server's table (Admit / Trusted / Leave).
struct Server::Slot {
  asio::any_io_executor executor;  // the connection's strand
  ServerStream* stream = nullptr;  // set and cleared on the strand; Close()d to evict it
  bool listed = false;             // in handshaking_; guarded by slots_mu_
  std::list<std::shared_ptr<Slot>>::iterator position;  // in handshaking_ when listed
};

// Leaves the table when the connection ends, however it ends.
class Server::SlotLease {
 public:
  SlotLease(Server* server, std::shared_ptr<Slot> slot) : server_(server), slot_(std::move(slot)) {}
  ~SlotLease() {
    slot_->stream = nullptr;
    server_->Leave(*slot_);
  }
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;

 private:
  Server* server_;
  std::shared_ptr<Slot> slot_;
};

}  // namespace kvpool::rpc

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
