#include "common/http_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <cctype>
#include <list>
#include <thread>
#include <vector>

#include "common/http_request.h"

// asio's coroutine frames come from its own recycling operator new and go back through the
// matching operator delete; gcc 12 cannot see that the two match (-Wmismatched-new-delete). A
// false positive: silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace kvpool {
// Named, not anonymous: a coroutine frame of HttpServer::Running holds one, and gcc warns
// (-Wsubobject-linkage) when such a frame has a field of an internal-linkage type.
using Request = HttpRequest;

namespace {

constexpr auto kAsTuple = asio::experimental::as_tuple(asio::use_awaitable);
constexpr size_t kMaxHeadBytes = kMaxHttpHeadBytes;
constexpr size_t kMaxBodyBytes = kMaxHttpBodyBytes;

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 202:
      return "Accepted";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string Serialize(const HttpResponse& r) {
  std::string out = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n", r.status,
      Reason(r.status), r.content_type, r.body.size());
  if (r.status == 401) out += "WWW-Authenticate: Bearer\r\n";
  if (!r.allow.empty()) out += "Allow: " + r.allow + "\r\n";
  out += "\r\n";
  out += r.body;
  return out;
}

// The server's own refusals (before any handler): JSON, as the admin endpoints answer.
// `message` is ours (ASCII, no quotes to escape beyond the few below).
HttpResponse Refuse(int status, std::string_view message) {
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) escaped += c;
  }
  return HttpResponse{status, "application/json",
                      fmt::format("{{\"status\": {}, \"error\": \"{}\", \"message\": \"{}\"}}\n",
                                  status, Reason(status), escaped)};
}

// Equal in time that depends only on the lengths (the secret's length is not a secret).
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

}  // namespace

// Everything one Start..Stop owns. Connections live on the I/O thread; handlers run on the pool.
struct HttpServer::Running {
  struct Conn {
    asio::ip::tcp::socket socket;
    bool reading = true;                  // still reading its request (may be evicted)
    std::list<Conn*>::iterator position;  // in `open`
    explicit Conn(asio::ip::tcp::socket s) : socket(std::move(s)) {}
  };

  explicit Running(const HttpServer& server)
      : owner(server), acceptor(io), pool(server.limits_.worker_threads) {}

  asio::awaitable<void> Accept();
  asio::awaitable<void> Serve(asio::ip::tcp::socket socket);
  asio::awaitable<HttpResponse> Answer(Conn& conn);
  HttpResponse Dispatch(const Request& req) const;

  const HttpServer& owner;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor;
  asio::thread_pool pool;
  std::list<Conn*> open;  // oldest first; I/O thread only
  std::thread thread;
};

asio::awaitable<void> HttpServer::Running::Accept() {
  asio::steady_timer backoff(io);
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kAsTuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      spdlog::warn("{}: accept failed: {}", owner.name_, ec.message());
      backoff.expires_after(std::chrono::milliseconds(50));  // out of descriptors: let some end
      co_await backoff.async_wait(kAsTuple);
      continue;
    }
    asio::co_spawn(io, Serve(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> HttpServer::Running::Serve(asio::ip::tcp::socket socket) {
  Conn conn(std::move(socket));
  if (open.size() >= owner.limits_.max_connections) {
    auto victim = std::find_if(open.begin(), open.end(), [](Conn* c) { return c->reading; });
    if (victim == open.end()) {
      std::string refused = Serialize(Refuse(503, "too many connections"));
      co_await asio::async_write(conn.socket, asio::buffer(refused), kAsTuple);
      co_return;
    }
    asio::error_code ignored;
    (*victim)->socket.close(ignored);  // its pending read ends with an error
    (*victim)->reading = false;
  }
  conn.position = open.insert(open.end(), &conn);
  asio::steady_timer deadline(io);
  deadline.expires_after(owner.limits_.connection_deadline);
  auto alive = std::make_shared<Conn*>(&conn);  // cleared when this coroutine ends
  deadline.async_wait([alive](const asio::error_code& e) {
    if (e || *alive == nullptr) return;
    asio::error_code ignored;
    (*alive)->socket.close(ignored);  // a slow client: every pending operation ends
  });
  HttpResponse response = co_await Answer(conn);
  conn.reading = false;
  if (response.status != 0 && conn.socket.is_open()) {
    std::string out = Serialize(response);
    co_await asio::async_write(conn.socket, asio::buffer(out), kAsTuple);
    asio::error_code ignored;
    conn.socket.shutdown(asio::socket_base::shutdown_send, ignored);
    if (response.status == 413 || response.status == 414 || response.status == 431) {
      // Refused before the whole request was read: closing with unread bytes would reset the
      // connection and the client might lose the answer. Read and drop the rest (up to 1 MiB,
      // within the connection's deadline) until the client closes.
      char sink[4096];
      for (size_t dropped = 0; dropped < (1u << 20);) {
        auto [rec, rn] = co_await conn.socket.async_read_some(asio::buffer(sink), kAsTuple);
        if (rec) break;
        dropped += rn;
      }
    }
  }
  *alive = nullptr;
  deadline.cancel();
  open.erase(conn.position);
}

// Reads the request and runs its handler. Status 0: nothing to answer (the peer went away or
// was cut off).
asio::awaitable<HttpResponse> HttpServer::Running::Answer(Conn& conn) {
  std::string buf;
  auto [ec, n] = co_await asio::async_read_until(
      conn.socket, asio::dynamic_buffer(buf, kMaxHeadBytes), "\r\n\r\n", kAsTuple);
  if (ec == asio::error::not_found) {
    // The request line alone over the cap is a URL too long; else the headers are too large.
    if (buf.find("\r\n") == std::string::npos) {
      co_return Refuse(414, "URL too long: the request line is over 16 KiB");
    }
    co_return Refuse(431, "request head too large: over 16 KiB");
  }
  if (ec) co_return HttpResponse{0, "", ""};
  Request req;
  if (Status st = ParseHttpHead(std::string_view(buf).substr(0, n - 2), &req); !st.ok()) {
    co_return Refuse(400, st.message());
  }
  if (req.content_length > kMaxBodyBytes) co_return Refuse(413, "request body over 16 KiB");
  std::string body = buf.substr(n);
  if (body.size() < req.content_length) {
    size_t have = body.size();
    body.resize(req.content_length);
    auto [bec, bn] = co_await asio::async_read(
        conn.socket, asio::buffer(body.data() + have, body.size() - have), kAsTuple);
    if (bec) co_return HttpResponse{0, "", ""};
  }
  body.resize(req.content_length);
  if (Status st = ParseHttpForm(body, &req); !st.ok()) co_return Refuse(400, st.message());
  conn.reading = false;
  // The handler runs on the pool; the connection waits without holding the I/O thread.
  co_await asio::post(pool, asio::use_awaitable);
  HttpResponse response = Dispatch(req);
  co_await asio::post(io, asio::use_awaitable);
  co_return response;
}

HttpResponse HttpServer::Running::Dispatch(const Request& req) const {
  const HttpHandlers& h = owner.handlers_;
  try {
    if (req.method == "GET") {
      const bool secret =
          !h.post_secret.empty() && std::find(h.secret_get_paths.begin(), h.secret_get_paths.end(),
                                              req.path) != h.secret_get_paths.end();
      if (secret && !ConstantTimeEquals(req.authorization, "Bearer " + h.post_secret)) {
        return Refuse(401, "this endpoint needs \"Authorization: Bearer <pool secret>\"");
      }
      return h.get(req.path, req.params);
    }
    if (req.method != "POST" || !h.post) {
      HttpResponse r = Refuse(405, fmt::format("method {} not allowed", req.method.substr(0, 16)));
      r.allow = h.post ? "GET, POST" : "GET";
      return r;
    }
    if (!h.post_enabled) return Refuse(403, h.post_disabled_reason);
    if (!h.post_secret.empty() &&
        !ConstantTimeEquals(req.authorization, "Bearer " + h.post_secret)) {
      spdlog::warn("{}: refusing POST {}: no valid Authorization: Bearer <pool secret>",
                   owner.name_, req.path);
      return Refuse(401, "this endpoint needs \"Authorization: Bearer <pool secret>\"");
    }
    return h.post(req.path, req.params);
  } catch (const std::exception& e) {
    spdlog::error("{} path={} error={}", owner.name_, req.path, e.what());
    return Refuse(500, fmt::format("internal error: {}", e.what()));
  }
}

HttpServer::HttpServer(std::string name, std::string host, uint16_t port, HttpHandlers handlers,
                       HttpLimits limits)
    : name_(std::move(name)),
      host_(std::move(host)),
      port_(port),
      handlers_(std::move(handlers)),
      limits_(limits) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  if (running_ != nullptr) {
    return Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, name_ + " already started");
  }
  auto r = std::make_unique<Running>(*this);
  asio::error_code ec;
  auto addr = asio::ip::make_address(host_, ec);
  asio::ip::tcp::endpoint ep(addr, port_);
  if (!ec) r->acceptor.open(ep.protocol(), ec);
  // SO_REUSEADDR only (no SO_REUSEPORT): a second server on a taken port is an error.
  if (!ec) r->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) r->acceptor.bind(ep, ec);
  if (!ec) r->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    r->pool.join();
    return Status(ErrorCode::RPC_FAIL,
                  fmt::format("{} cannot listen on {}:{} (port taken, or not an address "
                              "of this machine: {}); pass another --metrics_port (0: any free "
                              "port) or --enable_http_admin=false",
                              name_, host_, port_, ec.message()));
  }
  bound_port_ = r->acceptor.local_endpoint().port();
  asio::co_spawn(r->io, r->Accept(), asio::detached);
  Running* raw = r.get();
  r->thread = std::thread([raw] { raw->io.run(); });
  running_ = std::move(r);
  return Status::Ok();
}

void HttpServer::Stop() {
  if (running_ == nullptr) return;
  Running& r = *running_;
  asio::post(r.io, [&r] {
    asio::error_code ignored;
    r.acceptor.close(ignored);
  });
  r.pool.join();  // handlers already running finish; their answers are not sent
  r.io.stop();
  if (r.thread.joinable()) r.thread.join();
  running_.reset();  // destroys the connections still open
}

}  // namespace kvpool

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
