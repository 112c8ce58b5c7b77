#include "rpc/server.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <array>
#include <asio/experimental/as_tuple.hpp>
#include <asio/ssl.hpp>
#include <random>

#include "common/spin_wait.h"
#include "common/tenant_key.h"
#include "rpc/auth.h"
#include "rpc/kvpool.pb.h"

// asio's coroutine frames come from its own recycling operator new and go back through the
// matching operator delete; gcc 12 cannot see that the two match and warns at the end of every
// member coroutine (-Wmismatched-new-delete). A false positive: silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace kvpool::rpc {
namespace {

constexpr auto kUseTuple = asio::experimental::as_tuple(asio::use_awaitable);

// asio::async_read / async_write move at most 64 KiB per system call by default
// (default_max_transfer_size). A READ of a batch is tens of MiB: at that size the per-call cost
// and the epoll round trip after each short write took a third of the node's time. This
// condition lets each readv / writev take as much as the socket buffer holds.
constexpr size_t kMaxBytesPerCall = size_t{64} << 20;
size_t TransferAllInLargeCalls(const asio::error_code& ec, size_t /*transferred*/) {
  return ec ? 0 : kMaxBytesPerCall;
}
// Before a connection has authenticated, a frame's meta is at most this (a HELLO or AUTH is
// ~100 bytes): an anonymous peer cannot make the server allocate more.
constexpr uint32_t kMaxHandshakeMetaBytes = 4096;
constexpr const char* kAuthFailed = "authentication failed";
// Metadata is read in pieces of at least this much, each no larger than what has arrived so
// far: a header that announces 64 MiB costs memory only as the bytes come.
constexpr size_t kMetaChunkBytes = 64 * 1024;
// A connection's metadata buffer is kept between frames up to this capacity (reused), and
// freed after a larger frame.
constexpr size_t kKeptMetaBytes = 1 << 20;

asio::ip::address Unmapped(const asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  }
  return a;
}

bool SocketFromThisHost(const asio::ip::tcp::socket& s) {
  asio::error_code ec1, ec2;
  auto peer = s.remote_endpoint(ec1);
  auto local = s.local_endpoint(ec2);
  if (ec1 || ec2) return false;
  return FromThisHost(peer.address(), local.address());
}

bool SocketFromLoopback(const asio::ip::tcp::socket& s) {
  asio::error_code ec;
  auto peer = s.remote_endpoint(ec);
  return !ec && Unmapped(peer.address()).is_loopback();
}

std::string PeerName(const asio::ip::tcp::socket& s) {
  asio::error_code ec;
  auto ep = s.remote_endpoint(ec);
  if (ec) return "unknown peer";
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

std::string SubjectOf(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  char buf[512];
  X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof(buf));
  X509_free(cert);
  return buf;
}

}  // namespace

// The two stream kinds live in a named namespace: coroutine frames of Server's members hold them,
// and gcc warns (-Wsubobject-linkage) when such a frame has a field of an internal-linkage type.
namespace server_streams {

// Plain TCP: gathered writes and scattered reads straight on the socket.
class PlainStream : public ServerStream {
 public:
  explicit PlainStream(asio::ip::tcp::socket& socket) : socket_(socket) {}
  asio::awaitable<IoResult> ReadAll(const std::vector<asio::mutable_buffer>& buffers) override {
    co_return co_await asio::async_read(socket_, buffers, TransferAllInLargeCalls, kUseTuple);
  }
  asio::awaitable<IoResult> ReadSome(asio::mutable_buffer buffer) override {
    co_return co_await socket_.async_read_some(buffer, kUseTuple);
  }
  asio::awaitable<IoResult> WriteAll(const std::vector<asio::const_buffer>& buffers) override {
    co_return co_await asio::async_write(socket_, buffers, TransferAllInLargeCalls, kUseTuple);
  }
  void Close() override {
    asio::error_code ignored;
    socket_.close(ignored);
  }

 private:
  asio::ip::tcp::socket& socket_;
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

namespace {

// True when the peer's first bytes are a kvpool frame's magic rather than a TLS record: a
// client without TLS talking to a TLS server, which deserves a clear error instead of a failed
// handshake.
asio::awaitable<bool> StartsWithFrameMagic(asio::ip::tcp::socket& socket) {
  auto [ec] = co_await socket.async_wait(asio::socket_base::wait_read, kUseTuple);
  if (ec) co_return false;
  uint8_t first[4];
  asio::error_code peek_ec;
  size_t n = socket.receive(asio::buffer(first), asio::socket_base::message_peek, peek_ec);
  uint32_t magic = static_cast<uint32_t>(first[0]) | static_cast<uint32_t>(first[1]) << 8 |
                   static_cast<uint32_t>(first[2]) << 16 | static_cast<uint32_t>(first[3]) << 24;
  co_return !peek_ec && n == sizeof(first) && magic == kMagic;
}

}  // namespace

PayloadReader::PayloadReader(asio::ip::tcp::socket& socket, uint64_t size)
    : owned_(std::make_unique<PlainStream>(socket)), stream_(owned_.get()), size_(size) {}

PayloadReader::~PayloadReader() = default;

asio::awaitable<Status> PayloadReader::ReadInto(std::vector<asio::mutable_buffer> buffers) {
  uint64_t total = 0;
  for (const auto& b : buffers) total += b.size();
  if (total != size_) {
    co_return Status(ErrorCode::INVALID_PARAMS,
                     fmt::format("payload is {} bytes, request describes {}", size_, total));
  }
  consumed_ = true;
  auto [ec, n] = co_await stream_->ReadAll(buffers);
  if (ec) {
    failed_ = true;
    co_return Status(ErrorCode::TRANSFER_FAIL, fmt::format("payload read: {}", ec.message()));
  }
  co_return Status::Ok();
}

asio::awaitable<Status> PayloadReader::Discard() {
  consumed_ = true;
  std::array<char, 64 * 1024> sink;
  uint64_t left = size_;
  while (left > 0) {
    size_t chunk = std::min<uint64_t>(left, sink.size());
    std::vector<asio::mutable_buffer> one(1, asio::buffer(sink.data(), chunk));
    auto [ec, n] = co_await stream_->ReadAll(one);
    if (ec) {
      failed_ = true;
      co_return Status(ErrorCode::TRANSFER_FAIL, fmt::format("payload discard: {}", ec.message()));
    }
    left -= n;
  }
  co_return Status::Ok();
}

Reply Reply::Of(const google::protobuf::MessageLite& msg) {
  Reply r;
  msg.SerializeToString(&r.meta);
  return r;
}

Reply Reply::Error(const Status& st) {
  Reply r;
  r.code = st.ok() ? ErrorCode::INTERNAL_ERROR : st.code();
  r.message = st.message();
  return r;
}

bool FromThisHost(const asio::ip::address& peer, const asio::ip::address& local) {
  const asio::ip::address p = Unmapped(peer);
  return p.is_loopback() || p == Unmapped(local);
}

namespace {

std::vector<std::unique_ptr<asio::io_context>> MakeContexts(const ServerOptions& o) {
  std::vector<std::unique_ptr<asio::io_context>> ios;
  const int threads = std::max(1, o.threads);
  if (!o.pin_connections) {
    ios.push_back(std::make_unique<asio::io_context>(threads));
    return ios;
  }
  for (int i = 0; i < threads; ++i) ios.push_back(std::make_unique<asio::io_context>(1));
  return ios;
}

// io.run(), except that after each handler the thread polls for `spin` before it sleeps
// (ServerOptions::idle_spin).
void RunPolling(asio::io_context& io, std::chrono::microseconds spin) {
  if (spin.count() <= 0) {
    io.run();
    return;
  }
  while (!io.stopped()) {
    if (io.run_one() == 0) return;  // slept until a handler ran (or the context stopped)
    // The next requests may be microseconds away: serve what arrives for `spin` after the
    // wake-up (common/spin_wait.h), then sleep in run_one again. The budget does not restart
    // with each handler: under load that kept the threads polling, and the main job's nodes
    // and engines lost the CPU to it (docs/benchmarks.md, round 15).
    SpinUntil(spin, [&] {
      io.poll();
      return io.stopped();
    });
  }
}

}  // namespace

Server::Server(ServerOptions options, Service* service)
    : options_(std::move(options)),
      service_(service),
      ios_(MakeContexts(options_)),
      acceptor_(*ios_.front()) {}

Server::~Server() { Stop(); }

Status Server::LoadTls() {
  const SecurityOptions& s = options_.security;
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  asio::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use,
                   ec);
  auto failed = [&](const char* flag, const std::string& file) {
    return Status(ErrorCode::INVALID_PARAMS, fmt::format("{}: cannot load --{}={}: {}",
                                                         options_.name, flag, file, ec.message()));
  };
  ctx->use_certificate_chain_file(s.tls_cert, ec);
  if (ec) return failed("tls_cert", s.tls_cert);
  ctx->use_private_key_file(s.tls_key, asio::ssl::context::pem, ec);
  if (ec) return failed("tls_key", s.tls_key);
  if (s.tls_verify_client) {
    ctx->load_verify_file(s.tls_ca, ec);
    if (ec) return failed("tls_ca", s.tls_ca);
    ctx->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
  }
  // No session tickets: clients do not resume, and a ticket arriving after the handshake would
  // look like unexpected data on an idle pooled connection.
  SSL_CTX_set_num_tickets(ctx->native_handle(), 0);
  tls_ = std::move(ctx);
  return Status::Ok();
}

Status Server::Start() {
  asio::error_code ec;
  auto addr = asio::ip::make_address(options_.host, ec);
  if (ec) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("{}: bind address '{}' is not an IP address", options_.name, options_.host));
  }
  if (options_.security.tls_server()) KVPOOL_RETURN_IF_ERROR(LoadTls());
  auto listen_on = [&](uint16_t port) {
    if (acceptor_.is_open()) acceptor_.close();
    asio::ip::tcp::endpoint ep(addr, port);
    ec.clear();
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  };
  const auto [first, last] = options_.port_range;
  if (options_.port == 0 && first != 0 && first <= last) {
    const uint32_t count = static_cast<uint32_t>(last - first) + 1;
    const uint32_t start = std::random_device{}() % count;
    for (uint32_t i = 0; i < count; ++i) {
      listen_on(static_cast<uint16_t>(first + (start + i) % count));
      if (!ec || ec != asio::error::address_in_use) break;
    }
    if (ec == asio::error::address_in_use) {
      spdlog::info("{}: every port of {}-{} is taken; listening on any free port", options_.name,
                   first, last);
      listen_on(0);
    }
  } else {
    listen_on(options_.port);
  }
  if (ec) {
    return Status(ErrorCode::RPC_FAIL, fmt::format("{}: cannot listen on {}:{}: {}", options_.name,
                                                   options_.host, options_.port, ec.message()));
  }
  bound_port_ = acceptor_.local_endpoint().port();
  if (options_.security.auth_secret.empty() && !addr.is_loopback() && options_.protected_mode) {
    spdlog::warn(
        "{}: listening on {}:{} in PROTECTED MODE: no secret is set, so only peers on this host "
        "are served. Set the same secret on every process (--auth_secret_file FILE or ${}), or "
        "{} to serve unauthenticated peers from other hosts (docs/security.md).",
        options_.name, options_.host, bound_port_, kAuthSecretEnv, options_.insecure_hint);
  } else if (options_.security.auth_secret.empty() && !addr.is_loopback()) {
    spdlog::warn(
        "{}: listening on {}:{} WITHOUT AUTHENTICATION: anyone who can reach this port can read "
        "and overwrite the pool. Set --auth_secret_file FILE or ${} (docs/security.md).",
        options_.name, options_.host, bound_port_, kAuthSecretEnv);
  }
  asio::co_spawn(*ios_.front(), AcceptLoop(), asio::detached);
  const int n = std::max(1, options_.threads);
  for (int i = 0; i < n; ++i) {
    asio::io_context* io = ios_[static_cast<size_t>(i) % ios_.size()].get();
    threads_.emplace_back([io, spin = options_.idle_spin] {
      // A pinned context must not return while it waits for its first connection.
      auto work = asio::make_work_guard(*io);
      RunPolling(*io, spin);
    });
  }
  return Status::Ok();
}

void Server::Stop() {
  if (stopped_.exchange(true)) return;
  asio::post(*ios_.front(), [this] {
    asio::error_code ec;
    acceptor_.close(ec);
  });
  for (auto& io : ios_) io->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

size_t Server::connections() const {
  std::lock_guard lock(slots_mu_);
  return connections_;
}

size_t Server::handshaking() const {
  std::lock_guard lock(slots_mu_);
  return handshaking_.size();
}

std::shared_ptr<Server::Slot> Server::Admit(const asio::any_io_executor& executor) {
  std::shared_ptr<Slot> victim;
  auto slot = std::make_shared<Slot>();
  slot->executor = executor;
  {
    std::lock_guard lock(slots_mu_);
    if (connections_ >= options_.max_connections) return nullptr;
    ++connections_;
    if (!handshaking_.empty() && handshaking_.size() >= options_.max_handshaking) {
      victim = handshaking_.front();
      handshaking_.pop_front();
      victim->listed = false;
    }
    slot->position = handshaking_.insert(handshaking_.end(), slot);
    slot->listed = true;
  }
  if (victim != nullptr) {
    asio::post(victim->executor, [victim, name = options_.name] {
      if (victim->stream == nullptr) return;
      spdlog::warn("{}: closing the oldest connection still in its handshake (too many are)", name);
      victim->stream->Close();
    });
  }
  return slot;
}

void Server::Trusted(Slot& slot) {
  std::lock_guard lock(slots_mu_);
  if (slot.listed) handshaking_.erase(slot.position);
  slot.listed = false;
}

void Server::Leave(Slot& slot) {
  std::lock_guard lock(slots_mu_);
  if (slot.listed) handshaking_.erase(slot.position);
  slot.listed = false;
  --connections_;
}

asio::awaitable<void> Server::AcceptLoop() {
  asio::steady_timer backoff(co_await asio::this_coro::executor);
  for (;;) {
    // Pinned: the connection's own thread is its strand. Shared: a strand keeps one
    // connection's handlers in order across the threads.
    asio::any_io_executor served_by;
    if (options_.pin_connections) {
      served_by = ios_[next_io_]->get_executor();
      next_io_ = (next_io_ + 1) % ios_.size();
    } else {
      served_by = asio::make_strand(*ios_.front());
    }
    auto [ec, socket] = co_await acceptor_.async_accept(served_by, kUseTuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
      spdlog::warn("{}: accept failed: {}", options_.name, ec.message());
      // Out of descriptors (or memory): pausing lets connections end instead of spinning.
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(kUseTuple);
      continue;
    }
    socket.set_option(asio::ip::tcp::no_delay(true), ec);
    socket.set_option(asio::socket_base::keep_alive(true), ec);
    asio::co_spawn(socket.get_executor(), Accepted(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> Server::Accepted(asio::ip::tcp::socket socket) {
  ConnectionContext context;
  context.peer = PeerName(socket);
  context.from_this_host = SocketFromThisHost(socket);
  context.from_loopback = SocketFromLoopback(socket);
  const asio::any_io_executor ex = socket.get_executor();
  std::shared_ptr<Slot> slot = Admit(ex);
  if (slot == nullptr) {
    spdlog::warn("{}: refusing connection from {}: {} connections are open (the limit)",
                 options_.name, context.peer, options_.max_connections);
    co_return;  // the socket closes
  }
  SlotLease lease(this, slot);
  if (tls_ == nullptr) {
    PlainStream stream(socket);
    Watchdog watchdog(ex, stream, options_.name, context.peer);
    slot->stream = &stream;
    watchdog.Arm(options_.handshake_timeout, "handshake not completed in time");
    co_await Serve(stream, context, *slot, watchdog);
    slot->stream = nullptr;
    co_return;
  }
  TlsStream stream(std::move(socket), *tls_);
  Watchdog watchdog(ex, stream, options_.name, context.peer);
  slot->stream = &stream;
  // One deadline covers the TLS handshake, HELLO and AUTH.
  watchdog.Arm(options_.handshake_timeout, "handshake not completed in time");
  if (co_await StartsWithFrameMagic(stream.ssl().next_layer())) {
    co_await RefusePlain(stream.ssl().next_layer(), context.peer);
    slot->stream = nullptr;
    co_return;
  }
  auto [ec] = co_await stream.ssl().async_handshake(asio::ssl::stream_base::server, kUseTuple);
  if (ec) {
    spdlog::warn("{}: TLS handshake with {} failed: {}", options_.name, context.peer, ec.message());
    slot->stream = nullptr;
    co_return;
  }
  context.tls = true;
  context.tls_peer_subject = SubjectOf(stream.ssl().native_handle());
  co_await Serve(stream, context, *slot, watchdog);
  slot->stream = nullptr;
}

asio::awaitable<void> Server::RefusePlain(asio::ip::tcp::socket& socket, const std::string& peer) {
  PlainStream plain(socket);
  uint8_t hb[kFrameHeaderBytes];
  std::vector<asio::mutable_buffer> header_buf(1, asio::buffer(hb));
  auto [ec, n] = co_await plain.ReadAll(header_buf);
  if (ec) co_return;
  auto h = DecodeFrameHeader(hb, options_.limits);
  if (!h.ok()) co_return;
  spdlog::warn("{}: refusing plain (non-TLS) connection from {}", options_.name, peer);
  Status refused(ErrorCode::UNAVAILABLE_IN_CURRENT_MODE,
                 fmt::format("{} requires TLS: give the client --tls_ca (the CA that signed the "
                             "server's certificate)",
                             options_.name));
  co_await SendReply(plain, *h, Reply::Error(refused));
}

asio::awaitable<bool> Server::SendReply(ServerStream& stream, const FrameHeader& request,
                                        const Reply& reply) {
  std::string meta_holder;
  const std::string* meta = &reply.meta;
  if (reply.code != ErrorCode::OK) {
    ErrorInfo info;
    info.set_message(reply.message);
    info.SerializeToString(&meta_holder);
    meta = &meta_holder;
  }
  FrameHeader h;
  h.method = request.base_method() | kResponseBit;
  h.request_id = request.request_id;
  h.status = static_cast<int32_t>(reply.code);
  h.meta_len = static_cast<uint32_t>(meta->size());
  std::vector<asio::const_buffer> out;
  out.reserve(2 + reply.payload.size());
  uint8_t header[kFrameHeaderBytes];
  out.emplace_back(header, kFrameHeaderBytes);
  out.emplace_back(meta->data(), meta->size());
  const bool streamed = reply.code == ErrorCode::OK && reply.source != nullptr;
  if (reply.code == ErrorCode::OK) {
    for (const auto& b : reply.payload) {
      h.payload_len += b.size();
      out.push_back(b);
    }
    if (streamed) h.payload_len += reply.source->bytes();
  }
  EncodeFrameHeader(h, header);
  if (!streamed) {
    auto [ec, n] = co_await stream.WriteAll(out);
    co_return !ec;
  }
  // Each write takes every part ready by then (the header and meta go with the first ones).
  PayloadSource& source = *reply.source;
  size_t i = 0;
  do {
    if (i < source.parts()) {
      const size_t ready = source.WaitReady(i);
      for (size_t k = 0; k < ready; ++k) out.push_back(source.Part(i + k));
      i += ready;
    }
    auto [ec, n] = co_await stream.WriteAll(out);
    if (ec) co_return false;
    out.clear();
  } while (i < source.parts());
  co_return true;
}

asio::awaitable<bool> Server::Greet(ServerStream& stream, const FrameHeader& h,
                                    const std::string& meta, ConnectionContext& context,
                                    std::string& server_nonce, std::string& client_nonce,
                                    std::string& proof_key) {
  const std::string& peer = context.peer;
  if (h.method != HELLO) {
    spdlog::warn("{}: closing connection from {}: first frame is method {}, not HELLO",
                 options_.name, peer, h.method);
    if (!options_.security.auth_secret.empty()) {
      co_await SendReply(stream, h, Reply::Error(Status(ErrorCode::ILLEGAL_CLIENT, kAuthFailed)));
    }
    co_return false;
  }
  rpc::Hello hello;
  if (!hello.ParseFromString(meta)) {
    spdlog::warn("{}: closing connection from {}: unparsable HELLO", options_.name, peer);
    co_return false;
  }
  if (h.version != kProtocolVersion || hello.protocol_version() != kProtocolVersion) {
    std::string msg = fmt::format("{} speaks protocol version {}, peer {} speaks {}", options_.name,
                                  kProtocolVersion, peer, h.version);
    spdlog::warn("{}: closing connection: {}", options_.name, msg);
    co_await SendReply(stream, h, Reply::Error(Status(ErrorCode::INVALID_VERSION, msg)));
    co_return false;
  }
  context.peer_name = hello.peer_name();
  if (options_.protected_mode && options_.security.auth_secret.empty() && !context.from_this_host) {
    const std::string msg = fmt::format(
        "{} is in protected mode: it has no shared secret, so it serves only peers on its own "
        "host, and this connection comes from {}. Set the same secret on every process "
        "(--auth_secret_file FILE or ${}), or {} (docs/security.md)",
        options_.name, peer, kAuthSecretEnv, options_.insecure_hint);
    spdlog::warn("{}: refusing connection from {} ({}): protected mode (no secret set)",
                 options_.name, peer, hello.peer_name());
    co_await SendReply(stream, h, Reply::Error(Status(ErrorCode::ILLEGAL_CLIENT, msg)));
    co_return false;
  }
  spdlog::debug("{}: connection from {} ({}) tenant={}", options_.name, peer, hello.peer_name(),
                hello.tenant_id());
  if (Status st = ValidateTenantId(hello.tenant_id()); !st.ok()) {
    spdlog::warn("{}: closing connection from {}: {}", options_.name, peer, st.ToString());
    co_await SendReply(stream, h, Reply::Error(st));
    co_return false;
  }
  context.tenant_id = std::string(NormalizeTenantId(hello.tenant_id()));
  HelloReply reply;
  reply.set_protocol_version(kProtocolVersion);
  reply.set_server_name(options_.name);
  const std::string& pool_secret = options_.security.auth_secret;
  if (!pool_secret.empty()) {
    // A tenant-key peer proves (and is shown) the key of the tenant it names: it is confined to
    // that tenant. Only a peer that proves the pool secret itself is privileged.
    const bool tenant_key = hello.key_kind() == TENANT_KEY;
    proof_key = tenant_key ? DeriveTenantKey(pool_secret, context.tenant_id) : pool_secret;
    context.privileged = !tenant_key;
    if (hello.client_nonce().size() != kAuthNonceBytes) {
      spdlog::warn(
          "{}: refusing connection from {} ({}): it does not authenticate (no secret "
          "configured on that side?)",
          options_.name, peer, hello.peer_name());
      co_await SendReply(
          stream, h,
          Reply::Error(Status(ErrorCode::ILLEGAL_CLIENT,
                              fmt::format("{}: this server requires the shared secret "
                                          "(--auth_secret_file or ${})",
                                          kAuthFailed, kAuthSecretEnv))));
      co_return false;
    }
    client_nonce = hello.client_nonce();
    server_nonce = MakeAuthNonce();
    reply.set_server_nonce(server_nonce);
    reply.set_server_proof(AuthProof(proof_key, kServerLabel, client_nonce, server_nonce));
  }
  co_return co_await SendReply(stream, h, Reply::Of(reply));
}

asio::awaitable<bool> Server::CheckAuth(ServerStream& stream, const FrameHeader& h,
                                        const std::string& meta, ConnectionContext& context,
                                        const std::string& server_nonce,
                                        const std::string& client_nonce,
                                        const std::string& proof_key) {
  // Nothing but the proof is looked at: the generic reply tells the peer nothing else.
  Auth auth;
  bool ok = h.method == AUTH && auth.ParseFromString(meta) &&
            ProofMatches(AuthProof(proof_key, kClientLabel, client_nonce, server_nonce),
                         auth.client_proof());
  if (!ok) {
    spdlog::warn("{}: refusing connection from {} ({}): {} (method {})", options_.name,
                 context.peer, context.peer_name, kAuthFailed, h.method);
    co_await SendReply(stream, h, Reply::Error(Status(ErrorCode::ILLEGAL_CLIENT, kAuthFailed)));
    co_return false;
  }
  context.authenticated = true;
  co_return co_await SendReply(stream, h, Reply::Of(Empty()));
}

asio::awaitable<bool> Server::ReadFrame(ServerStream& stream, Watchdog& watchdog, bool handshaking,
                                        const std::string& peer, FrameHeader& header,
                                        std::string& meta) {
  // Between frames a connection may be silent for idle_timeout (during the handshake its own
  // deadline runs); once a frame's first byte is in, the rest must follow within frame_timeout.
  if (!handshaking) watchdog.Arm(options_.idle_timeout, "silent for longer than the idle timeout");
  uint8_t hb[kFrameHeaderBytes];
  auto [ec, n] = co_await stream.ReadSome(asio::buffer(hb));
  if (!ec && !handshaking) watchdog.Arm(options_.frame_timeout, "frame not completed in time");
  if (!ec && n < kFrameHeaderBytes) {
    std::vector<asio::mutable_buffer> rest(1, asio::buffer(hb + n, kFrameHeaderBytes - n));
    std::tie(ec, n) = co_await stream.ReadAll(rest);
  }
  if (ec) {
    if (ec != asio::error::eof && ec != asio::error::operation_aborted) {
      spdlog::debug("{}: connection from {} ended: {}", options_.name, peer, ec.message());
    }
    co_return false;
  }
  auto h = DecodeFrameHeader(hb, options_.limits);
  if (!h.ok()) {
    spdlog::warn("{}: closing connection from {}: {}", options_.name, peer, h.status().ToString());
    co_return false;
  }
  header = *h;
  if (handshaking && (h->meta_len > kMaxHandshakeMetaBytes || h->payload_len != 0)) {
    spdlog::warn(
        "{}: closing connection from {}: {} bytes of meta and {} of payload before "
        "the handshake completed",
        options_.name, peer, h->meta_len, h->payload_len);
    if (!options_.security.auth_secret.empty()) {
      co_await SendReply(stream, *h, Reply::Error(Status(ErrorCode::ILLEGAL_CLIENT, kAuthFailed)));
    }
    co_return false;
  }
  if (meta.capacity() > kKeptMetaBytes) std::string().swap(meta);
  meta.clear();
  while (meta.size() < h->meta_len) {
    const size_t have = meta.size();
    const size_t chunk = std::min<size_t>(h->meta_len - have, std::max(kMetaChunkBytes, have));
    meta.resize(have + chunk);
    std::vector<asio::mutable_buffer> part(1, asio::buffer(meta.data() + have, chunk));
    auto [mec, mn] = co_await stream.ReadAll(part);
    if (mec) {
      spdlog::warn("{}: closing connection from {}: truncated frame ({})", options_.name, peer,
                   mec.message());
      co_return false;
    }
  }
  co_return true;
}

asio::awaitable<void> Server::Serve(ServerStream& stream, ConnectionContext& context, Slot& slot,
                                    Watchdog& watchdog) {
  const std::string& peer = context.peer;
  const bool needs_auth = !options_.security.auth_secret.empty();
  std::string meta;
  std::string server_nonce;
  std::string client_nonce;
  std::string proof_key;  // the pool secret, or the tenant key of the tenant the peer named
  bool greeted = false;
  FrameHeader header;
  for (;;) {
    const bool handshaking = !greeted || (needs_auth && !context.authenticated);
    if (!co_await ReadFrame(stream, watchdog, handshaking, peer, header, meta)) co_return;
    const FrameHeader* h = &header;
    if (h->is_response()) {
      spdlog::warn("{}: closing connection from {}: unexpected response frame", options_.name,
                   peer);
      co_return;
    }
    if (!greeted) {
      if (!co_await Greet(stream, *h, meta, context, server_nonce, client_nonce, proof_key))
        co_return;
      greeted = true;
      if (!needs_auth) {
        watchdog.Cancel();
        Trusted(slot);
      }
      continue;
    }
    if (needs_auth && !context.authenticated) {
      if (!co_await CheckAuth(stream, *h, meta, context, server_nonce, client_nonce, proof_key))
        co_return;
      watchdog.Cancel();
      Trusted(slot);
      continue;
    }
    if (h->version != kProtocolVersion) {
      spdlog::warn("{}: closing connection from {}: frame version {}", options_.name, peer,
                   h->version);
      co_return;
    }
    PayloadReader payload(stream, h->payload_len);
    Reply reply = co_await service_->HandleFrom(context, *h, meta, payload);
    if (!payload.consumed()) (void)co_await payload.Discard();
    if (payload.failed()) {
      spdlog::warn("{}: closing connection from {}: payload truncated", options_.name, peer);
      co_return;
    }
    if (!co_await SendReply(stream, *h, reply)) co_return;
  }
}

}  // namespace kvpool::rpc

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
