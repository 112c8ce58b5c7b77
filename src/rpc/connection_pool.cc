#include "rpc/connection_pool.h"

namespace kvpool::rpc {

ConnectionPool::ConnectionPool(std::string peer_name, size_t max_idle, ConnectOptions options)
    : peer_name_(std::move(peer_name)), max_idle_(max_idle), options_(std::move(options)) {}

ConnectionPool::Lease::~Lease() {
  if (pool_ != nullptr && conn_ != nullptr && !conn_->broken()) pool_->Return(std::move(conn_));
}

Result<ConnectionPool::Lease> ConnectionPool::Acquire(const Endpoint& endpoint, Deadline deadline) {
  const std::string key = endpoint.ToString();
  for (;;) {
    std::unique_ptr<Connection> conn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = idle_.find(key);
      if (it == idle_.end() || it->second.empty()) break;
      conn = std::move(it->second.back());
      it->second.pop_back();
    }
    if (conn->StillOpen()) return Lease(this, std::move(conn));
    // The peer closed it while idle (restart, idle timeout): drop it and try the next one.
  }
  ConnectOptions options;
  {
    std::lock_guard<std::mutex> lock(mu_);
    options = options_;
  }
  auto conn = Connection::Connect(endpoint, peer_name_, deadline, options);
  if (!conn.ok()) return conn.status();
  return Lease(this, std::move(conn).value());
}

void ConnectionPool::Return(std::unique_ptr<Connection> conn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& list = idle_[conn->endpoint().ToString()];
  if (list.size() < max_idle_) list.push_back(std::move(conn));
}

void ConnectionPool::SetConnectOptions(ConnectOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  options_ = std::move(options);
  idle_.clear();
}

void ConnectionPool::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.clear();
}

}  // namespace kvpool::rpc
