// A small HTTP server for the metrics and admin endpoints of the master and the node, on
// cpp-httplib with its own accept thread and a small worker pool. Plain HTTP; bind it to a
// trusted network (see docs/operations.md and docs/security.md).
//
// The server knows nothing of kvpool: it hands each request's path and URL-decoded query
// parameters to the role's handlers (master/admin_routes.h, node/node_admin.h), which tests and
// fuzzers also call directly.
//
// Threading: Start and Stop from one thread; the handlers run on the server's threads, several
// at once, so they must be thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "kvpool/status.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace kvpool {

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

using HttpParams = std::multimap<std::string, std::string>;
// Answers one request: its path ("/metrics") and query (or form) parameters, URL-decoded.
using HttpHandler = std::function<HttpResponse(std::string_view path, const HttpParams& params)>;

struct HttpHandlers {
  HttpHandler get;   // required
  HttpHandler post;  // optional: without it POST answers 405
};

class HttpServer {
 public:
  // `name` names the server in logs and errors ("master http admin"). Port 0 picks a free one.
  HttpServer(std::string name, std::string host, uint16_t port, HttpHandlers handlers);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving. Errors: RPC_FAIL naming host:port when it cannot bind (taken, or
  // not an address of this machine); UNAVAILABLE_IN_CURRENT_STATUS when already started.
  Status Start();
  // Stops accepting, finishes in-flight requests (each bounded by 5 s socket timeouts) and joins
  // the threads. Idempotent; safe without Start(). Start may be called again afterwards.
  void Stop();
  // The bound port. Valid after a successful Start().
  uint16_t port() const { return bound_port_; }

 private:
  const std::string name_;
  const std::string host_;
  const uint16_t port_;
  const HttpHandlers handlers_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> finished_{false};  // the accept loop returned
  uint16_t bound_port_ = 0;
};

}  // namespace kvpool
