#include "client/standalone/node_link.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace kvpool::client {
namespace {

using Lock = std::unique_lock<DeadlineMutex>;

// Locks `mu` before `deadline`, or fails with RPC_TIMEOUT.
Result<Lock> LockBy(DeadlineMutex& mu, Deadline deadline) {
  Lock lock(mu, std::defer_lock);
  if (!lock.try_lock_until(deadline)) {
    return Status(ErrorCode::RPC_TIMEOUT,
                  "deadline passed waiting for the link to the kvpool node (re-attaching)");
  }
  return lock;
}

}  // namespace

NodeLink::NodeLink(NodeLinkOptions options, std::function<std::vector<Region>()> regions)
    : options_(std::move(options)), regions_(std::move(regions)) {}

NodeLink::~NodeLink() { Close(); }

Status NodeLink::Attach(Deadline deadline) {
  auto lock = LockBy(mu_, deadline);
  if (!lock.ok()) return lock.status();
  return AttachLocked(deadline);
}

Status NodeLink::AttachLocked(Deadline deadline) {
  control_.reset();
  up_ = false;
  auto conn = rpc::UnixConnection::Connect(options_.socket_name,
                                           "standalone client " + options_.client_id, deadline);
  if (!conn.ok()) {
    return Status(conn.code(),
                  fmt::format("{} (is a `kvpool node` running on this host with that --port or "
                              "--local_socket_path?)",
                              conn.status().message()));
  }
  rpc::Attach req;
  req.set_client_id(options_.client_id);
  req.set_pid(static_cast<uint32_t>(::getpid()));
  req.set_mem_pool_size(options_.mem_pool_size);
  req.set_local_buffer_size(options_.local_buffer_size);
  rpc::AttachReply reply;
  KVPOOL_RETURN_IF_ERROR((*conn)->Call(rpc::ATTACH, req, &reply, deadline));
  size_t registered = 0;
  for (const Region& r : regions_()) {
    rpc::RegisterRegion reg;
    reg.set_region_id(r.id);
    reg.set_size(r.size);
    reg.set_staging(r.staging);
    int fd = r.fd->get();
    Status st = (*conn)->Call(rpc::REGISTER_REGION, reg, nullptr, deadline, {&fd, 1});
    if ((*conn)->broken()) return st;
    if (!st.ok()) {
      spdlog::warn("node refused region={} again after re-attach: error={}", r.id, st.ToString());
      continue;
    }
    ++registered;
  }
  control_ = std::move(conn).value();
  session_id_ = reply.session_id();
  session_token_ = reply.session_token();
  segment_name_ = reply.segment_name();
  master_server_address_ = reply.master_server_address();
  names_master_.store(!master_server_address_.empty(), std::memory_order_release);
  ++generation_;
  up_ = true;
  master_reachable_ = true;
  if (ever_attached_) {
    spdlog::info("re-attached to kvpool node at {}: session={} regions={}", options_.socket_name,
                 session_id_, registered);
  }
  ever_attached_ = true;
  return Status::Ok();
}

void NodeLink::DownLocked(const Status& why) {
  if (up_) {
    spdlog::warn(
        "kvpool node at {} unreachable: error={} (re-attaching on the next call and "
        "every {} ms)",
        options_.socket_name, why.ToString(), options_.heartbeat_interval.count());
  }
  up_ = false;
  control_.reset();
  std::lock_guard<std::mutex> data_lock(data_mu_);
  idle_.clear();
}

Status NodeLink::EnsureUpLocked(Deadline deadline) {
  if (closed_) return Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, "client is closed");
  if (up_ && control_ != nullptr && control_->StillOpen()) return Status::Ok();
  if (up_) DownLocked(Status(ErrorCode::RPC_FAIL, "the node closed the session's connection"));
  return AttachLocked(deadline);
}

Status NodeLink::Control(rpc::Method method, const google::protobuf::MessageLite& request,
                         google::protobuf::MessageLite* response, Deadline deadline,
                         std::span<const int> fds) {
  auto lock = LockBy(mu_, deadline);
  if (!lock.ok()) return lock.status();
  KVPOOL_RETURN_IF_ERROR(EnsureUpLocked(deadline));
  Status st = control_->Call(method, request, response, deadline, fds);
  if (control_->broken()) DownLocked(st);
  return st;
}

Result<NodeLink::ConnPtr> NodeLink::DataConnection(Deadline deadline, uint64_t* generation) {
  rpc::JoinSession join;
  {
    auto lock = LockBy(mu_, deadline);
    if (!lock.ok()) return lock.status();
    KVPOOL_RETURN_IF_ERROR(EnsureUpLocked(deadline));
    *generation = generation_;
    join.set_session_id(session_id_);
    join.set_session_token(session_token_);
  }
  {
    std::lock_guard<std::mutex> lock(data_mu_);
    while (!idle_.empty()) {
      Idle idle = std::move(idle_.back());
      idle_.pop_back();
      if (idle.generation == *generation && idle.conn->StillOpen()) return std::move(idle.conn);
    }
  }
  auto conn = rpc::UnixConnection::Connect(options_.socket_name,
                                           "standalone client " + options_.client_id, deadline);
  if (!conn.ok()) return conn.status();
  Status st = (*conn)->Call(rpc::JOIN_SESSION, join, nullptr, deadline);
  if (!st.ok()) {
    // The node no longer knows the session (it restarted or dropped us): attach again next time.
    auto lock = LockBy(mu_, deadline);
    if (lock.ok() && generation_ == *generation) DownLocked(st);
    return st;
  }
  return std::move(conn).value();
}

void NodeLink::ReturnDataConnection(uint64_t generation, ConnPtr conn) {
  std::lock_guard<std::mutex> lock(data_mu_);
  if (idle_.size() < 16) idle_.push_back({generation, std::move(conn)});
}

Status NodeLink::Data(rpc::Method method, const google::protobuf::MessageLite& request,
                      google::protobuf::MessageLite* response, Deadline deadline) {
  uint64_t generation = 0;
  auto conn = DataConnection(deadline, &generation);
  if (!conn.ok()) return conn.status();
  Status st = (*conn)->Call(method, request, response, deadline);
  if (!(*conn)->broken()) ReturnDataConnection(generation, std::move(conn).value());
  return st;
}

int NodeLink::Health() {
  const Deadline deadline = DeadlineAfter(options_.rpc_timeout);
  auto lock = LockBy(mu_, deadline);
  if (!lock.ok() || !EnsureUpLocked(deadline).ok()) return 2;
  rpc::LocalHeartbeatReply reply;
  Status st = control_->Call(rpc::LOCAL_HEARTBEAT, rpc::Empty(), &reply, deadline);
  if (!st.ok()) {
    if (control_->broken()) DownLocked(st);
    return 2;
  }
  master_reachable_ = reply.master_reachable();
  return reply.master_reachable() ? 0 : 2;
}

std::string NodeLink::segment_name() const {
  std::lock_guard<DeadlineMutex> lock(mu_);
  return segment_name_;
}

bool NodeLink::up() const { return up_.load(std::memory_order_acquire); }

std::string NodeLink::master_server_address() const {
  std::lock_guard<DeadlineMutex> lock(mu_);
  return master_server_address_;
}

void NodeLink::StartHeartbeat() {
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
}

void NodeLink::HeartbeatLoop() {
  std::unique_lock<std::mutex> hb(hb_mu_);
  while (!hb_stop_) {
    hb.unlock();
    {
      const Deadline deadline = DeadlineAfter(options_.rpc_timeout);
      auto lock = LockBy(mu_, deadline);
      if (lock.ok() && !closed_) {
        if (up_ && control_ != nullptr && control_->StillOpen()) {
          rpc::LocalHeartbeatReply reply;
          Status st = control_->Call(rpc::LOCAL_HEARTBEAT, rpc::Empty(), &reply, deadline);
          if (st.ok()) master_reachable_ = reply.master_reachable();
          if (control_->broken()) DownLocked(st);
        } else {
          Status st = EnsureUpLocked(deadline);
          if (!st.ok()) spdlog::debug("re-attach failed: error={}", st.ToString());
        }
      }
    }
    hb.lock();
    hb_cv_.wait_for(hb, options_.heartbeat_interval, [this] { return hb_stop_; });
  }
}

void NodeLink::Close() {
  {
    std::lock_guard<std::mutex> hb(hb_mu_);
    hb_stop_ = true;
  }
  hb_cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  {
    std::lock_guard<DeadlineMutex> lock(mu_);
    closed_ = true;
    up_ = false;
    control_.reset();
  }
  std::lock_guard<std::mutex> data_lock(data_mu_);
  idle_.clear();
}

}  // namespace kvpool::client
