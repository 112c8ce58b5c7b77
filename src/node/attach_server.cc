#include "node/attach_server.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace kvpool::node {

std::string LocalSocketName(uint16_t port) { return fmt::format("@kvpool_node_{}.sock", port); }

AttachServer::AttachServer(AttachServerOptions options, AttachService* service)
    : options_(std::move(options)), service_(service) {}

AttachServer::~AttachServer() { Stop(); }

Status AttachServer::Start() {
  wake_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_.valid()) return Status(ErrorCode::RPC_FAIL, "eventfd failed");
  for (const auto& name : options_.socket_names) {
    auto fd = rpc::ListenUnix(name);
    if (!fd.ok()) {
      return Status(fd.code(), fmt::format("{} (is another kvpool node with this --port running "
                                           "on this host?)",
                                           fd.status().message()));
    }
    listeners_.push_back(std::move(fd).value());
    if (name[0] != '@') paths_.push_back(name);
    spdlog::info("serving standalone clients on unix socket {}", name);
  }
  started_ = true;
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void AttachServer::Stop() {
  if (!started_ || stopping_.exchange(true)) return;
  uint64_t one = 1;
  (void)::write(wake_.get(), &one, sizeof(one));
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(workers_mu_);
    for (auto& w : workers_) w->handle->Shutdown();
  }
  ReapWorkers(/*all=*/true);
  listeners_.clear();
  for (const auto& p : paths_) ::unlink(p.c_str());
}

void AttachServer::AcceptLoop() {
  std::vector<pollfd> fds;
  for (const auto& l : listeners_) fds.push_back({l.get(), POLLIN, 0});
  fds.push_back({wake_.get(), POLLIN, 0});
  const int tick_ms = static_cast<int>(std::chrono::duration_cast<Millis>(options_.tick).count());
  while (!stopping_.load()) {
    for (auto& p : fds) p.revents = 0;
    ::poll(fds.data(), fds.size(), tick_ms);
    service_->DropSilent();
    ReapWorkers(/*all=*/false);
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      for (;;) {
        rpc::UniqueFd fd = rpc::AcceptUnix(fds[i].fd);
        if (!fd.valid()) break;
        std::lock_guard<std::mutex> lock(workers_mu_);
        if (workers_.size() >= options_.max_connections) {
          spdlog::warn("refusing a local connection: {} are open", workers_.size());
          continue;  // closed by fd's destructor
        }
        auto worker = std::make_unique<Worker>();
        worker->handle = std::make_shared<ConnectionHandle>(std::move(fd));
        Worker* w = worker.get();
        workers_.push_back(std::move(worker));
        w->thread = std::thread([this, w] { Serve(w); });
      }
    }
  }
}

void AttachServer::ReapWorkers(bool all) {
  std::list<std::unique_ptr<Worker>> finished;
  {
    std::lock_guard<std::mutex> lock(workers_mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (all || (*it)->done.load()) {
        finished.push_back(std::move(*it));
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& w : finished) {
    if (w->thread.joinable()) w->thread.join();
  }
}

namespace {

// Only processes of the node's own user (or root) may attach: a standalone client can read and
// write every key, and the socket is reachable by every local user (abstract sockets have no
// file permissions).
bool PeerMayAttach(const rpc::PeerCredentials& peer) {
  return peer.uid >= 0 && (static_cast<uid_t>(peer.uid) == ::geteuid() || peer.uid == 0);
}

}  // namespace

void AttachServer::Serve(Worker* worker) {
  LocalConnection conn;
  conn.handle = worker->handle;
  conn.peer = rpc::PeerOf(worker->handle->fd());
  if (PeerMayAttach(conn.peer)) {
    ServeFrames(conn);
  } else {
    spdlog::warn(
        "refusing local connection from pid {} uid {}: only uid {} (this node's) or root "
        "may attach",
        conn.peer.pid, conn.peer.uid, ::geteuid());
  }
  service_->Disconnected(conn);  // before the close: a session may still shut this socket down
  worker->handle->Close();
  worker->done = true;
}

void AttachServer::ServeFrames(LocalConnection& conn) {
  const int fd = conn.handle->fd();
  const std::string peer = fmt::format("pid {}", conn.peer.pid);
  bool greeted = false;
  rpc::UnixFrame frame;
  for (;;) {
    while (!rpc::WaitReadable(fd, options_.tick)) {
      if (stopping_.load()) return;
    }
    if (stopping_.load()) return;
    Status st = rpc::RecvUnixFrame(fd, rpc::UnixFrameLimits(),
                                   DeadlineAfter(options_.frame_timeout), &frame);
    if (!st.ok()) {
      if (st.message() == "connection closed by peer") {
        spdlog::debug("local connection from {} closed", peer);
      } else {
        spdlog::warn("closing local connection from {}: {}", peer, st.ToString());
      }
      return;
    }
    const rpc::FrameHeader& h = frame.header;
    LocalReply reply;
    if (h.is_response() || h.version != rpc::kProtocolVersion ||
        (!greeted && h.method != rpc::HELLO)) {
      spdlog::warn("closing local connection from {}: unexpected frame (method {}, version {})",
                   peer, h.method, h.version);
      return;
    }
    if (h.method == rpc::HELLO) {
      rpc::Hello hello;
      if (greeted || !frame.fds.empty() || !hello.ParseFromString(frame.meta) ||
          hello.protocol_version() != rpc::kProtocolVersion) {
        spdlog::warn("closing local connection from {}: bad HELLO", peer);
        return;
      }
      greeted = true;
      rpc::HelloReply r;
      r.set_protocol_version(rpc::kProtocolVersion);
      r.set_server_name("kvpool node");
      reply = LocalReply::Of(r);
    } else {
      auto start = std::chrono::steady_clock::now();
      reply = service_->Handle(conn, frame);
      if (options_.metrics != nullptr) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
        options_.metrics->RecordLocal(h.method, reply.code, static_cast<uint64_t>(ns));
      }
    }
    frame.fds.clear();  // descriptors not taken by the service are closed here
    rpc::FrameHeader out;
    out.method = h.method | rpc::kResponseBit;
    out.request_id = h.request_id;
    out.status = static_cast<int32_t>(reply.code);
    std::string meta = reply.meta;
    if (reply.code != ErrorCode::OK) {
      rpc::ErrorInfo info;
      info.set_message(reply.message);
      meta = info.SerializeAsString();
    }
    out.meta_len = static_cast<uint32_t>(meta.size());
    st = rpc::SendUnixFrame(fd, out, meta, {}, DeadlineAfter(options_.frame_timeout));
    if (!st.ok()) {
      spdlog::debug("local connection from {}: reply not sent: {}", peer, st.ToString());
      return;
    }
    if (reply.close) {
      spdlog::warn("closing local connection from {}: {}", peer, reply.message);
      return;
    }
  }
}

}  // namespace kvpool::node
