#include "node/attach_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <asio/experimental/as_tuple.hpp>

namespace kvpool::node {
namespace {

constexpr auto kAsTuple = asio::experimental::as_tuple(asio::use_awaitable);
// Before a connection has attached its frames are HELLO, ATTACH or JOIN_SESSION (~100 bytes).
constexpr uint32_t kMaxPendingMetaBytes = 4096;
constexpr auto kNever = Clock::time_point::max();

// Only processes of the node's own user (or root) may attach: a standalone client can read and
// write every key, and the socket is reachable by every local user (abstract sockets have no
// file permissions).
bool PeerMayAttach(const rpc::PeerCredentials& peer) {
  return peer.uid >= 0 && (static_cast<uid_t>(peer.uid) == ::geteuid() || peer.uid == 0);
}

}  // namespace

std::string LocalSocketName(uint16_t port) { return fmt::format("@kvpool_node_{}.sock", port); }

// One connection, owned by its Serve coroutine (and the server's list). Fields are touched on
// the I/O thread, except `local` and `greeted`, which the worker running its request uses
// while the I/O thread leaves them alone (busy).
struct AttachServer::Conn {
  Conn(asio::io_context& io, LocalConnection c)
      : local(std::move(c)),
        waiter(io, local.handle->fd()),
        timer(io),
        peer(fmt::format("pid {}", local.peer.pid)) {}
  LocalConnection local;
  asio::posix::stream_descriptor waiter;  // waits on local.handle's fd; released, never closes it
  asio::steady_timer timer;               // the nearer of the two deadlines below
  rpc::UnixFrameReader reader;
  std::string peer;
  std::list<std::shared_ptr<Conn>>::iterator position;
  Clock::time_point attach_deadline = kNever;  // while pending
  Clock::time_point frame_deadline = kNever;   // while a frame is partly in
  bool pending = true;                         // not attached yet (counted in pending_count_)
  bool busy = false;                           // its request runs on the pool
  bool expired = false;  // a deadline passed, it was evicted or the server stops: end it
  bool refuse = false;   // over max_connections: its HELLO gets an error
  bool greeted = false;
};

AttachServer::AttachServer(AttachServerOptions options, AttachService* service)
    : options_(std::move(options)), service_(service) {}

AttachServer::~AttachServer() { Stop(); }

Status AttachServer::Start() {
  for (const auto& name : options_.socket_names) {
    auto fd = rpc::ListenUnix(name, 1024);
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
  int workers = options_.worker_threads;
  if (workers <= 0) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    workers = std::clamp(2 * cores, 8, 64);
  }
  pool_ = std::make_unique<asio::thread_pool>(workers);
  max_lingering_ = options_.linger > Clock::duration::zero() ? std::max(1, workers / 2) : 0;
  for (size_t i = 0; i < listeners_.size(); ++i) {
    listen_waiters_.push_back(
        std::make_unique<asio::posix::stream_descriptor>(io_, listeners_[i].get()));
    asio::co_spawn(io_, AcceptLoop(i), asio::detached);
  }
  asio::co_spawn(io_, Housekeeping(), asio::detached);
  io_thread_ = std::thread([this] { io_.run(); });
  return Status::Ok();
}

void AttachServer::Stop() {
  if (!started_ || stopping_.exchange(true)) return;
  asio::post(io_, [this] {
    for (auto& w : listen_waiters_) {
      asio::error_code ignored;
      w->cancel(ignored);
      w->release();
    }
    for (auto& c : conns_) {
      c->expired = true;
      asio::error_code ignored;
      c->waiter.cancel(ignored);
      c->local.handle->Shutdown();  // a request in flight fails its reply at once
    }
  });
  // Requests in flight finish (their store calls have deadlines); then every connection ends.
  auto end = Clock::now() + std::chrono::seconds(60);
  while (open_count_.load() > 0 && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  pool_->join();
  io_.stop();
  if (io_thread_.joinable()) io_thread_.join();
  listeners_.clear();
  for (const auto& p : paths_) ::unlink(p.c_str());
}

asio::awaitable<void> AttachServer::AcceptLoop(size_t listener) {
  asio::posix::stream_descriptor& waiter = *listen_waiters_[listener];
  const int listen_fd = listeners_[listener].get();
  while (!stopping_.load()) {
    auto [ec] = co_await waiter.async_wait(asio::posix::descriptor_base::wait_read, kAsTuple);
    if (ec || stopping_.load()) co_return;
    for (;;) {
      rpc::UniqueFd fd = rpc::AcceptUnix(listen_fd);
      if (!fd.valid()) {
        if (errno == EMFILE || errno == ENFILE) {
          spdlog::warn("cannot accept a local connection: out of file descriptors");
          asio::steady_timer pause(io_, std::chrono::milliseconds(50));
          co_await pause.async_wait(kAsTuple);
        }
        break;
      }
      LocalConnection local;
      local.peer = rpc::PeerOf(fd.get());
      if (!PeerMayAttach(local.peer)) {
        spdlog::warn(
            "refusing local connection from pid {} uid {}: only uid {} (this node's) or root "
            "may attach",
            local.peer.pid, local.peer.uid, ::geteuid());
        continue;  // closed by fd's destructor
      }
      local.handle = std::make_shared<ConnectionHandle>(std::move(fd));
      auto conn = std::make_shared<Conn>(io_, std::move(local));
      Admit(conn);
      asio::co_spawn(io_, Serve(conn), asio::detached);
    }
  }
}

void AttachServer::Admit(const std::shared_ptr<Conn>& conn) {
  conn->position = conns_.insert(conns_.end(), conn);
  if (open_count_.fetch_add(1) + 1 > options_.max_connections) conn->refuse = true;
  if (pending_count_.load() >= options_.max_pending) {
    for (auto& c : conns_) {
      if (!c->pending || c->busy || c->expired) continue;
      spdlog::warn(
          "closing local connection from {}: not attached, and {} unattached "
          "connections are open (the oldest makes room)",
          c->peer, options_.max_pending);
      c->expired = true;
      asio::error_code ignored;
      c->waiter.cancel(ignored);
      break;
    }
  }
  pending_count_.fetch_add(1);
  conn->attach_deadline = Clock::now() + options_.attach_timeout;
  Rearm(*conn);
}

void AttachServer::Attached(Conn& conn) {
  if (!conn.pending) return;
  conn.pending = false;
  conn.attach_deadline = kNever;
  pending_count_.fetch_sub(1);
  Rearm(conn);
}

void AttachServer::Rearm(Conn& conn) {
  const auto when = std::min(conn.pending ? conn.attach_deadline : kNever, conn.frame_deadline);
  if (when == kNever) {
    conn.timer.cancel();
    return;
  }
  conn.timer.expires_at(when);
  std::weak_ptr<Conn> weak = *conn.position;
  conn.timer.async_wait([weak](const asio::error_code& e) {
    auto c = weak.lock();
    if (e || c == nullptr || c->busy || c->expired) return;
    const auto now = Clock::now();
    const char* why = nullptr;
    if (now >= c->frame_deadline) {
      why = "frame not completed in time";
    } else if (c->pending && now >= c->attach_deadline) {
      why = "did not attach in time";
    }
    if (why == nullptr) return;
    spdlog::warn("closing local connection from {}: {}", c->peer, why);
    c->expired = true;
    asio::error_code ignored;
    c->waiter.cancel(ignored);
  });
}

asio::awaitable<bool> AttachServer::ReadFrame(Conn& conn) {
  rpc::FrameLimits limits = rpc::UnixFrameLimits();
  if (conn.pending) limits.max_meta_bytes = kMaxPendingMetaBytes;
  const int fd = conn.local.handle->fd();
  for (;;) {
    auto done = conn.reader.ReadAvailable(fd, limits);
    if (!done.ok()) {
      LogReadEnd(conn, done.status());
      co_return false;
    }
    if (*done) {
      conn.frame_deadline = kNever;
      Rearm(conn);
      co_return true;
    }
    if (conn.reader.started() && conn.frame_deadline == kNever) {
      conn.frame_deadline = Clock::now() + options_.frame_timeout;
      Rearm(conn);
    }
    auto [ec] = co_await conn.waiter.async_wait(asio::posix::descriptor_base::wait_read, kAsTuple);
    if (ec || conn.expired || stopping_.load()) co_return false;
  }
}

asio::awaitable<void> AttachServer::Serve(std::shared_ptr<Conn> conn) {
  for (;;) {
    if (!co_await ReadFrame(*conn)) break;
    rpc::UnixFrame& frame = conn->reader.frame();
    bool keep;
    if (frame.header.method == rpc::HELLO || conn->refuse) {
      keep = Answer(*conn, frame);  // small and never blocks on the store
      conn->reader.Reset();
    } else {
      // Only an attached connection's worker lingers: before that, frames have the pending limits
      // and deadlines, which the I/O thread applies.
      const bool linger = !conn->pending && max_lingering_ > 0;
      conn->busy = true;
      co_await asio::post(*pool_, asio::use_awaitable);
      keep = AnswerOnWorker(*conn, linger);
      co_await asio::post(io_, asio::use_awaitable);
      conn->busy = false;
      Rearm(*conn);  // a deadline that came while it was busy was not applied
    }
    if (conn->local.session != nullptr) Attached(*conn);
    if (!keep || conn->expired || stopping_.load()) break;
  }
  conn->expired = true;
  conn->timer.cancel();
  conn->waiter.release();
  if (conn->pending) pending_count_.fetch_sub(1);
  conn->pending = false;
  conns_.erase(conn->position);
  if (conn->local.session != nullptr) {
    // Dropping a session unmaps its regions: not on the I/O thread.
    co_await asio::post(*pool_, asio::use_awaitable);
  }
  service_->Disconnected(conn->local);  // before the close: a session may still shut it down
  conn->local.handle->Close();
  open_count_.fetch_sub(1);
}

void AttachServer::LogReadEnd(const Conn& conn, const Status& why) {
  if (why.message() == "connection closed by peer") {
    spdlog::debug("local connection from {} closed", conn.peer);
  } else {
    spdlog::warn("closing local connection from {}: {}", conn.peer, why.ToString());
  }
}

bool AttachServer::AnswerOnWorker(Conn& conn, bool linger) {
  const int fd = conn.local.handle->fd();
  for (;;) {
    if (!Answer(conn, conn.reader.frame())) return false;
    conn.reader.Reset();
    if (!linger || stopping_.load()) return true;
    if (lingering_.fetch_add(1) >= max_lingering_) {
      lingering_.fetch_sub(1);
      return true;  // keep workers free for other connections' requests
    }
    // Stop() shuts the connection down, which ends this wait at once.
    const bool readable = rpc::WaitReadable(fd, options_.linger);
    lingering_.fetch_sub(1);
    if (!readable || stopping_.load()) return true;
    auto done = conn.reader.ReadAvailable(fd, rpc::UnixFrameLimits());
    if (!done.ok()) {
      LogReadEnd(conn, done.status());
      return false;
    }
    if (!*done) return true;  // the I/O thread reads the rest, under the frame deadline
  }
}

bool AttachServer::Answer(Conn& conn, rpc::UnixFrame& frame) {
  const rpc::FrameHeader& h = frame.header;
  const std::string& peer = conn.peer;
  LocalReply reply;
  if (conn.refuse) {
    spdlog::warn("refusing local connection from {}: {} are open (the limit)", peer,
                 options_.max_connections);
    reply = LocalReply::Error(
        Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
               fmt::format("kvpool node refuses the connection: {} local connections are open (the "
                           "limit); close some or retry later",
                           options_.max_connections)));
    reply.close = true;
  } else if (h.is_response() || h.version != rpc::kProtocolVersion ||
             (!conn.greeted && h.method != rpc::HELLO)) {
    spdlog::warn("closing local connection from {}: unexpected frame (method {}, version {})", peer,
                 h.method, h.version);
    return false;
  } else if (h.method == rpc::HELLO) {
    rpc::Hello hello;
    if (conn.greeted || !frame.fds.empty() || !hello.ParseFromString(frame.meta) ||
        hello.protocol_version() != rpc::kProtocolVersion) {
      spdlog::warn("closing local connection from {}: bad HELLO", peer);
      return false;
    }
    conn.greeted = true;
    rpc::HelloReply r;
    r.set_protocol_version(rpc::kProtocolVersion);
    r.set_server_name("kvpool node");
    reply = LocalReply::Of(r);
  } else {
    auto start = std::chrono::steady_clock::now();
    reply = service_->Handle(conn.local, frame);
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
  Status st = rpc::SendUnixFrame(conn.local.handle->fd(), out, meta, {},
                                 DeadlineAfter(options_.frame_timeout));
  if (!st.ok()) {
    spdlog::debug("local connection from {}: reply not sent: {}", peer, st.ToString());
    return false;
  }
  if (reply.close) {
    if (!conn.refuse) spdlog::warn("closing local connection from {}: {}", peer, reply.message);
    return false;
  }
  return true;
}

asio::awaitable<void> AttachServer::Housekeeping() {
  asio::steady_timer tick(io_);
  while (!stopping_.load()) {
    tick.expires_after(options_.tick);
    auto [ec] = co_await tick.async_wait(kAsTuple);
    if (ec || stopping_.load()) co_return;
    co_await asio::post(*pool_, asio::use_awaitable);  // dropping sessions unmaps memory
    service_->DropSilent();
    co_await asio::post(io_, asio::use_awaitable);
  }
}

}  // namespace kvpool::node
