// Reusable client connections, keyed by endpoint. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rpc/connection.h"

namespace kvpool::rpc {

class ConnectionPool {
 public:
  // `peer_name` is sent in every HELLO (shows in the server's logs). At most `max_idle` idle
  // connections are kept per endpoint.
  // `options` (secret, TLS) apply to every connection.
  explicit ConnectionPool(std::string peer_name, size_t max_idle = 8,
                          ConnectOptions options = ConnectOptions());

  // A connection on loan; returned to the pool on destruction unless it broke.
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<Connection> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = default;
    ~Lease();
    Connection* operator->() { return conn_.get(); }
    Connection& operator*() { return *conn_; }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<Connection> conn_;
  };

  // An idle connection to `endpoint` (checked to be still open) or a new one.
  // Errors: as Connection::Connect.
  Result<Lease> Acquire(const Endpoint& endpoint, Deadline deadline);

  // Closes every idle connection (e.g. after a peer restarted).
  void Clear();

  // Replaces the options of connections made from now on and drops the idle ones (a client
  // learns its secret and TLS settings in Init, after the pool exists).
  void SetConnectOptions(ConnectOptions options);

 private:
  void Return(std::unique_ptr<Connection> conn);

  const std::string peer_name_;
  const size_t max_idle_;
  std::mutex mu_;
  ConnectOptions options_;                                                // guarded by mu_
  std::map<std::string, std::vector<std::unique_ptr<Connection>>> idle_;  // guarded by mu_
};

}  // namespace kvpool::rpc
