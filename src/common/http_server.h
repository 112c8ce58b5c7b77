// A small HTTP/1.1 server for the metrics and admin endpoints of the master and the node. Plain
// HTTP; bind it to a trusted network (see docs/operations.md and docs/security.md).
//
// The server knows nothing of kvpool: it hands each request's path and URL-decoded query (and
// form) parameters to the role's handlers (master/admin_routes.h, node/node_admin.h), which
// tests and fuzzers also call directly.
//
// Slow and hostile clients (docs/security.md). One I/O thread reads every request without
// blocking, so a client that sends its request slowly holds no thread: a connection must
// deliver its whole request (at most 16 KiB with its body) and take its answer within
// `HttpLimits::connection_deadline` of being accepted, or it is closed. At most
// `max_connections` are open at once; a new one beyond that closes the oldest one still reading
// its request (a client that sends its request at once is never shut out by slow ones).
// Handlers run on a few worker threads once their request is complete. One request per
// connection (every answer says "Connection: close").
//
// Writes. A POST reaches `HttpHandlers::post` only when the handlers allow it: without a post
// handler it answers 405; with `post_enabled` false 403; with a `post_secret` it must carry
// "Authorization: Bearer <secret>" (compared in constant time) or it answers 401.
//
// Threading: Start and Stop from one thread; the handlers run on the server's worker threads,
// several at once, so they must be thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/http_request.h"
#include "kvpool/status.h"

namespace kvpool {

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string allow{};  // a 405's "Allow" header: the methods the path takes ("POST")
};

// Answers one request: its path ("/metrics") and query (or form) parameters, URL-decoded.
using HttpHandler = std::function<HttpResponse(std::string_view path, const HttpParams& params)>;

struct HttpHandlers {
  HttpHandler get;   // required
  HttpHandler post;  // optional: without it POST answers 405
  // False: every POST answers 403 with `post_disabled_reason` (the handler is not called).
  bool post_enabled = true;
  std::string post_disabled_reason = "writes are disabled on this server";
  // When set, a POST must carry "Authorization: Bearer <post_secret>"; otherwise it answers 401.
  std::string post_secret;
  // GETs of these paths need the same "Authorization: Bearer <post_secret>" when it is set (the
  // status page's data); other GETs stay open (Prometheus scrapes /metrics without one).
  std::vector<std::string> secret_get_paths;
};

struct HttpLimits {
  size_t max_connections = 128;  // open at once (the oldest still reading makes room)
  std::chrono::milliseconds connection_deadline{10000};  // accept to answer written
  int worker_threads = 4;                                // run the handlers
};

class HttpServer {
 public:
  // `name` names the server in logs and errors ("master http admin"). Port 0 picks a free one.
  HttpServer(std::string name, std::string host, uint16_t port, HttpHandlers handlers,
             HttpLimits limits = HttpLimits());
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving. Errors: RPC_FAIL naming host:port when it cannot bind (taken, or
  // not an address of this machine); UNAVAILABLE_IN_CURRENT_STATUS when already started.
  Status Start();
  // Stops accepting, waits for handlers that are running, closes every connection and joins
  // the threads. Idempotent; safe without Start(). Start may be called again afterwards.
  void Stop();
  // The bound port. Valid after a successful Start().
  uint16_t port() const { return bound_port_; }

 private:
  struct Running;  // the I/O context, threads and connections of one Start..Stop

  const std::string name_;
  const std::string host_;
  const uint16_t port_;
  const HttpHandlers handlers_;
  const HttpLimits limits_;
  std::unique_ptr<Running> running_;
  uint16_t bound_port_ = 0;
};

}  // namespace kvpool
