// The master's HTTP server for metrics and admin endpoints (AdminRoutes), on cpp-httplib with its
// own accept thread and a small worker pool. Plain HTTP, GET only; bind it to a trusted network
// (see docs/operations.md).
//
// Threading: Start and Stop from one thread; the handlers run on the server's threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "kvpool/status.h"
#include "master/admin_routes.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace kvpool::master {

class HttpAdmin {
 public:
  // Serves `routes` (which must outlive this) on host:port; port 0 picks a free one.
  HttpAdmin(std::string host, uint16_t port, const AdminRoutes* routes);
  ~HttpAdmin();  // Stop()s
  HttpAdmin(const HttpAdmin&) = delete;
  HttpAdmin& operator=(const HttpAdmin&) = delete;

  // Binds and starts serving. Errors: RPC_FAIL naming host:port when it cannot bind (taken, or
  // not an address of this machine).
  Status Start();
  // Stops accepting, finishes in-flight requests (each bounded by 5 s socket timeouts) and joins
  // the threads. Idempotent; safe without Start().
  void Stop();
  // The bound port. Valid after a successful Start().
  uint16_t port() const { return bound_port_; }

 private:
  const std::string host_;
  const uint16_t port_;
  const AdminRoutes* const routes_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> finished_{false};  // the accept loop returned
  uint16_t bound_port_ = 0;
};

}  // namespace kvpool::master
