// One connection of rpc::Server: TLS or plain, the handshake (HELLO, AUTH), frames read under
// their deadlines, each request handed to the Service and its reply sent.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/experimental/concurrent_channel.hpp>
#include <cstring>
#include <span>

#include "common/tenant_key.h"
#include "rpc/auth.h"
#include "rpc/kvpool.pb.h"
#include "rpc/receive_low_water.h"
#include "rpc/server.h"
#include "rpc/server_internal.h"

// asio's coroutine frames come from its own recycling operator new and go back through the
// matching operator delete; gcc 12 cannot see that the two match and warns at the end of every
// member coroutine (-Wmismatched-new-delete). A false positive: silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace kvpool::rpc {

using server_detail::kAuthFailed;
using server_detail::kKeptMetaBytes;
using server_detail::kMaxHandshakeMetaBytes;
using server_detail::kMetaChunkBytes;
using server_detail::PeerName;
using server_detail::SocketFromLoopback;
using server_detail::SocketFromThisHost;
using server_detail::SubjectOf;

namespace {

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

// Parts of `source` ready from `from` on (>= 1), awaited in the event loop: the thread serves
// its other connections meanwhile.
asio::awaitable<size_t> AwaitParts(PayloadSource& source, size_t from) {
  using asio::experimental::awaitable_operators::operator||;
  for (;;) {
    if (const size_t n = source.Ready(from); n > 0) co_return n;
    const asio::any_io_executor ex = co_await asio::this_coro::executor;
    // The producer's thread only posts into the channel; the wait itself stays on this thread.
    auto woken =
        std::make_shared<asio::experimental::concurrent_channel<void(asio::error_code, bool)>>(ex,
                                                                                               1);
    source.NotifyReady(from, [woken] { woken->try_send(asio::error_code{}, true); });
    asio::steady_timer by(ex, source.ReadyBy(from));
    co_await (woken->async_receive(kUseTuple) || by.async_wait(kUseTuple));
  }
}

}  // namespace

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
    PlainStream stream(socket, options_.zero_copy_min_bytes, options_.zero_copy_counters,
                       options_.read_ahead);
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
    auto [ec, n] = reply.payload_stable && reply.code == ErrorCode::OK
                       ? co_await stream.WriteAllZeroCopy(out)
                       : co_await stream.WriteAll(out);
    co_return !ec;
  }
  // Each write takes every part ready by then (the header and meta go with the first ones).
  PayloadSource& source = *reply.source;
  size_t i = 0;
  do {
    if (i < source.parts()) {
      const size_t ready = co_await AwaitParts(source, i);
      for (size_t k = 0; k < ready; ++k) out.push_back(source.Part(i + k));
      i += ready;
    }
    auto [ec, n] = co_await stream.WriteAll(out);
    if (ec) co_return false;
    out.clear();
  } while (i < source.parts());
  co_return true;
}

namespace server_streams {

size_t PlainStream::TakeAhead(asio::mutable_buffer buffer) {
  const size_t n = std::min(buffer.size(), ahead_to_ - ahead_from_);
  if (n > 0) std::memcpy(buffer.data(), ahead_.get() + ahead_from_, n);
  ahead_from_ += n;
  return n;
}

asio::awaitable<IoResult> PlainStream::ReadSome(asio::mutable_buffer buffer) {
  if (ahead_from_ < ahead_to_) co_return IoResult{asio::error_code{}, TakeAhead(buffer)};
  if (!read_ahead_ || buffer.size() >= kReadAheadBytes)
    co_return co_await socket_.async_read_some(buffer, kUseTuple);
  if (ahead_ == nullptr) ahead_ = std::make_unique<char[]>(kReadAheadBytes);
  auto [ec, n] =
      co_await socket_.async_read_some(asio::buffer(ahead_.get(), kReadAheadBytes), kUseTuple);
  if (ec) co_return IoResult{ec, 0};
  ahead_from_ = 0;
  ahead_to_ = n;
  co_return IoResult{asio::error_code{}, TakeAhead(buffer)};
}

asio::awaitable<IoResult> PlainStream::ReadAll(const std::vector<asio::mutable_buffer>& buffers) {
  const uint64_t total = asio::buffer_size(buffers);
  ReceiveLowWater low_water = ReceiveLowWater::ForRequest(socket_.native_handle(), total);
  if (!low_water.active() && ahead_from_ == ahead_to_) {  // nothing ahead: read in place
    co_return co_await asio::async_read(socket_, buffers, TransferAllInLargeCalls, kUseTuple);
  }
  std::vector<asio::mutable_buffer> rest(buffers);
  size_t first = 0;
  size_t got = 0;
  while (ahead_from_ < ahead_to_ && first < rest.size()) {
    const size_t n = TakeAhead(rest[first]);
    got += n;
    first = Consume(rest, first, n);
  }
  uint64_t left = total - got;
  if (left == 0) co_return IoResult{asio::error_code{}, got};
  // The mark follows the payload's whole size (above), so a payload whose head came ahead reads
  // as it would have.
  if (!low_water.active()) {
    std::span<const asio::mutable_buffer> pending(rest.data() + first, rest.size() - first);
    auto [ec, n] = co_await asio::async_read(socket_, pending, TransferAllInLargeCalls, kUseTuple);
    co_return IoResult{ec, got + n};
  }
  // async_read_some reads what has arrived (one readv); the low-water mark decides how much
  // must have arrived before the socket is reported readable again.
  while (left > 0) {
    low_water.Before(left);
    std::span<const asio::mutable_buffer> pending(rest.data() + first, rest.size() - first);
    auto [ec, n] = co_await socket_.async_read_some(pending, kUseTuple);
    if (ec) {
      if (!socket_.is_open()) low_water.Forget();  // closed by the watchdog
      co_return IoResult{ec, got};
    }
    got += n;
    left -= n;
    first = Consume(rest, first, n);
  }
  co_return IoResult{asio::error_code{}, got};
}

asio::awaitable<IoResult> PlainStream::WriteAllZeroCopy(
    const std::vector<asio::const_buffer>& buffers) {
  const int fd = socket_.native_handle();
  uint64_t left = asio::buffer_size(buffers);
  int flags = zero_copy_.FlagsFor(fd, left);
  if (flags == 0) co_return co_await WriteAll(buffers);
  // async_send takes what the socket accepts now (one sendmsg with the flags): send the rest
  // from where it stopped.
  std::vector<asio::const_buffer> rest(buffers);
  size_t first = 0;
  size_t written = 0;
  while (left > 0) {
    std::span<const asio::const_buffer> pending(rest.data() + first, rest.size() - first);
    auto [ec, n] = co_await socket_.async_send(pending, flags, kUseTuple);
    if (ec == asio::error::no_buffer_space && flags != 0) {  // completions not reaped yet
      flags = zero_copy_.AfterNoBuffers(fd);
      continue;
    }
    if (ec) co_return IoResult{ec, written};
    zero_copy_.Sent(flags);
    written += n;
    left -= n;
    first = Consume(rest, first, n);
    flags = left > 0 ? zero_copy_.FlagsFor(fd, left) : 0;
  }
  co_return IoResult{asio::error_code{}, written};
}

}  // namespace server_streams

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
  const asio::any_io_executor executor = co_await asio::this_coro::executor;  // for PlanPoll
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
    PlanPoll(executor, reply);
  }
}

}  // namespace kvpool::rpc

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
