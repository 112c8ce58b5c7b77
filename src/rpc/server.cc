#include "rpc/server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <asio/experimental/as_tuple.hpp>

#include "rpc/kvpool.pb.h"

namespace kvpool::rpc {
namespace {

constexpr auto kUseTuple = asio::experimental::as_tuple(asio::use_awaitable);

std::string PeerName(const asio::ip::tcp::socket& s) {
  asio::error_code ec;
  auto ep = s.remote_endpoint(ec);
  if (ec) return "unknown peer";
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

}  // namespace

asio::awaitable<Status> PayloadReader::ReadInto(std::vector<asio::mutable_buffer> buffers) {
  uint64_t total = 0;
  for (const auto& b : buffers) total += b.size();
  if (total != size_) {
    co_return Status(ErrorCode::INVALID_PARAMS,
                     fmt::format("payload is {} bytes, request describes {}", size_, total));
  }
  consumed_ = true;
  auto [ec, n] = co_await asio::async_read(socket_, buffers, kUseTuple);
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
    auto [ec, n] = co_await asio::async_read(socket_, asio::buffer(sink.data(), chunk), kUseTuple);
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

Server::Server(ServerOptions options, Service* service)
    : options_(std::move(options)), service_(service), acceptor_(io_) {}

Server::~Server() { Stop(); }

Status Server::Start() {
  asio::error_code ec;
  auto addr = asio::ip::make_address(options_.host, ec);
  if (ec) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("{}: bind address '{}' is not an IP address", options_.name, options_.host));
  }
  asio::ip::tcp::endpoint ep(addr, options_.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(ErrorCode::RPC_FAIL, fmt::format("{}: cannot listen on {}:{}: {}", options_.name,
                                                   options_.host, options_.port, ec.message()));
  }
  bound_port_ = acceptor_.local_endpoint().port();
  asio::co_spawn(io_, AcceptLoop(), asio::detached);
  int n = std::max(1, options_.threads);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { io_.run(); });
  return Status::Ok();
}

void Server::Stop() {
  if (stopped_.exchange(true)) return;
  asio::post(io_, [this] {
    asio::error_code ec;
    acceptor_.close(ec);
  });
  io_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

asio::awaitable<void> Server::AcceptLoop() {
  for (;;) {
    auto [ec, socket] = co_await acceptor_.async_accept(asio::make_strand(io_), kUseTuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
      spdlog::warn("{}: accept failed: {}", options_.name, ec.message());
      continue;
    }
    socket.set_option(asio::ip::tcp::no_delay(true), ec);
    socket.set_option(asio::socket_base::keep_alive(true), ec);
    auto ex = socket.get_executor();
    asio::co_spawn(ex, Serve(std::move(socket)), asio::detached);
  }
}

asio::awaitable<bool> Server::SendReply(asio::ip::tcp::socket& socket, const FrameHeader& request,
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
  if (reply.code == ErrorCode::OK) {
    for (const auto& b : reply.payload) {
      h.payload_len += b.size();
      out.push_back(b);
    }
  }
  EncodeFrameHeader(h, header);
  auto [ec, n] = co_await asio::async_write(socket, out, kUseTuple);
  co_return !ec;
}

asio::awaitable<bool> Server::Handshake(asio::ip::tcp::socket& socket, const FrameHeader& h,
                                        const std::string& meta, const std::string& peer) {
  if (h.method != HELLO) {
    spdlog::warn("{}: closing connection from {}: first frame is method {}, not HELLO",
                 options_.name, peer, h.method);
    co_return false;
  }
  Hello hello;
  if (!hello.ParseFromString(meta)) {
    spdlog::warn("{}: closing connection from {}: unparsable HELLO", options_.name, peer);
    co_return false;
  }
  if (h.version != kProtocolVersion || hello.protocol_version() != kProtocolVersion) {
    std::string msg = fmt::format("{} speaks protocol version {}, peer {} speaks {}", options_.name,
                                  kProtocolVersion, peer, h.version);
    spdlog::warn("{}: closing connection: {}", options_.name, msg);
    co_await SendReply(socket, h, Reply::Error(Status(ErrorCode::INVALID_VERSION, msg)));
    co_return false;
  }
  spdlog::debug("{}: connection from {} ({})", options_.name, peer, hello.peer_name());
  HelloReply reply;
  reply.set_protocol_version(kProtocolVersion);
  reply.set_server_name(options_.name);
  co_return co_await SendReply(socket, h, Reply::Of(reply));
}

asio::awaitable<void> Server::Serve(asio::ip::tcp::socket socket) {
  const std::string peer = PeerName(socket);
  asio::steady_timer watchdog(socket.get_executor());
  std::string meta;
  bool greeted = false;
  for (;;) {
    uint8_t hb[kFrameHeaderBytes];
    auto [ec, n] = co_await asio::async_read(socket, asio::buffer(hb), kUseTuple);
    if (ec) {
      if (ec != asio::error::eof && ec != asio::error::operation_aborted) {
        spdlog::debug("{}: connection from {} ended: {}", options_.name, peer, ec.message());
      }
      co_return;
    }
    auto h = DecodeFrameHeader(hb, options_.limits);
    if (!h.ok()) {
      spdlog::warn("{}: closing connection from {}: {}", options_.name, peer,
                   h.status().ToString());
      co_return;
    }
    // Once a frame has started it must be read, handled and answered within frame_timeout.
    watchdog.expires_after(options_.frame_timeout);
    watchdog.async_wait([&socket, this, peer](const asio::error_code& e) {
      if (e) return;
      spdlog::warn("{}: closing connection from {}: frame not completed in time", options_.name,
                   peer);
      asio::error_code ignored;
      socket.close(ignored);
    });
    meta.resize(h->meta_len);
    auto [mec, mn] = co_await asio::async_read(socket, asio::buffer(meta), kUseTuple);
    if (mec) {
      spdlog::warn("{}: closing connection from {}: truncated frame ({})", options_.name, peer,
                   mec.message());
      co_return;
    }
    if (h->is_response()) {
      spdlog::warn("{}: closing connection from {}: unexpected response frame", options_.name,
                   peer);
      co_return;
    }
    if (!greeted) {
      if (!co_await Handshake(socket, *h, meta, peer)) co_return;
      greeted = true;
      watchdog.cancel();
      continue;
    }
    if (h->version != kProtocolVersion) {
      spdlog::warn("{}: closing connection from {}: frame version {}", options_.name, peer,
                   h->version);
      co_return;
    }
    PayloadReader payload(socket, h->payload_len);
    Reply reply = co_await service_->Handle(*h, meta, payload);
    if (!payload.consumed()) co_await payload.Discard();
    if (payload.failed()) {
      spdlog::warn("{}: closing connection from {}: payload truncated", options_.name, peer);
      co_return;
    }
    if (!co_await SendReply(socket, *h, reply)) co_return;
    watchdog.cancel();
  }
}

}  // namespace kvpool::rpc
