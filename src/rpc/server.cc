// rpc::Server: its io_contexts and threads, start and stop, admission of connections and the
// accept loop; one connection's conversation is in server_session.cc.
#include "rpc/server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <random>

#include "common/spin_wait.h"
#include "rpc/server_internal.h"

// asio's coroutine frames come from its own recycling operator new and go back through the
// matching operator delete; gcc 12 cannot see that the two match and warns at the end of every
// member coroutine (-Wmismatched-new-delete). A false positive: silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace kvpool::rpc {

using server_detail::Unmapped;

PayloadReader::PayloadReader(asio::ip::tcp::socket& socket, uint64_t size)
    : owned_(std::make_unique<PlainStream>(socket)), stream_(owned_.get()), size_(size) {}

PayloadReader::~PayloadReader() = default;

asio::awaitable<Status> PayloadReader::ReadInto(std::vector<asio::mutable_buffer> buffers) {
  uint64_t total = 0;
  for (const auto& b : buffers) total += b.size();
  if (total != size_) {
    co_return Status(ErrorCode::INVALID_PARAMS,
                     fmt::format("payload is {} bytes, request describes {}", size_, total));
  }
  consumed_ = true;
  auto [ec, n] = co_await stream_->ReadAll(buffers);
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
    std::vector<asio::mutable_buffer> one(1, asio::buffer(sink.data(), chunk));
    auto [ec, n] = co_await stream_->ReadAll(one);
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

bool FromThisHost(const asio::ip::address& peer, const asio::ip::address& local) {
  const asio::ip::address p = Unmapped(peer);
  return p.is_loopback() || p == Unmapped(local);
}

namespace {

std::vector<std::unique_ptr<asio::io_context>> MakeContexts(const ServerOptions& o) {
  std::vector<std::unique_ptr<asio::io_context>> ios;
  const int threads = std::max(1, o.threads);
  if (!o.pin_connections) {
    ios.push_back(std::make_unique<asio::io_context>(threads));
    return ios;
  }
  for (int i = 0; i < threads; ++i) ios.push_back(std::make_unique<asio::io_context>(1));
  return ios;
}

// io.run(), except that after each handler the thread polls for `spin` before it sleeps
// (ServerOptions::idle_spin). `plan` (null unless pinned) is the context's Server::PollPlan: a
// template only because that struct is private to Server.
template <typename Plan>
void RunPolling(asio::io_context& io, std::chrono::microseconds spin, Plan* plan) {
  if (spin.count() <= 0) {
    io.run();
    return;
  }
  auto poll = [&] {
    io.poll();
    return io.stopped();
  };
  // A reply that said its peer's next request is far off (next_request_after) ends the idle
  // poll: nothing else is likely due, and the poll takes a CPU that peer's transfer needs.
  auto idle_poll = [&] {
    return poll() || (plan != nullptr && plan->sleep.load(std::memory_order_relaxed));
  };
  while (!io.stopped()) {
    if (io.run_one() == 0) return;  // slept until a handler ran (or the context stopped)
    // The next requests may be microseconds away: serve what arrives for `spin` after the
    // wake-up (common/spin_wait.h), then sleep in run_one again. The budget does not restart
    // with each handler: under load that kept the threads polling, and the main job's nodes
    // and engines lost the CPU to it (docs/benchmarks.md, round 15).
    if (SpinUntil(spin, idle_poll) && io.stopped()) return;
    if (plan == nullptr) continue;
    // A request announced by a reply (a PUT_END) is polled for until it is due; the handlers
    // run meanwhile may announce later ones.
    while (Clock::now() < plan->until.load(std::memory_order_relaxed)) {
      const auto left = plan->until.load(std::memory_order_relaxed) - Clock::now();
      if (SpinUntil(std::chrono::ceil<std::chrono::microseconds>(left), poll)) return;
    }
    // Spent: a hint given meanwhile must not cut the poll after the next wake-up short.
    plan->sleep.store(false, std::memory_order_relaxed);
  }
}

}  // namespace

Server::Server(ServerOptions options, Service* service)
    : options_(std::move(options)),
      service_(service),
      ios_(MakeContexts(options_)),
      poll_plans_(std::make_unique<PollPlan[]>(ios_.size())),
      accept_strand_(asio::make_strand(*ios_.front())),
      acceptor_(*ios_.front()) {}

Server::~Server() { Stop(); }

Status Server::LoadTls() {
  const SecurityOptions& s = options_.security;
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  asio::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use,
                   ec);
  auto failed = [&](const char* flag, const std::string& file) {
    return Status(ErrorCode::INVALID_PARAMS, fmt::format("{}: cannot load --{}={}: {}",
                                                         options_.name, flag, file, ec.message()));
  };
  ctx->use_certificate_chain_file(s.tls_cert, ec);
  if (ec) return failed("tls_cert", s.tls_cert);
  ctx->use_private_key_file(s.tls_key, asio::ssl::context::pem, ec);
  if (ec) return failed("tls_key", s.tls_key);
  if (s.tls_verify_client) {
    ctx->load_verify_file(s.tls_ca, ec);
    if (ec) return failed("tls_ca", s.tls_ca);
    ctx->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
  }
  // No session tickets: clients do not resume, and a ticket arriving after the handshake would
  // look like unexpected data on an idle pooled connection.
  SSL_CTX_set_num_tickets(ctx->native_handle(), 0);
  tls_ = std::move(ctx);
  return Status::Ok();
}

Status Server::Start() {
  asio::error_code ec;
  auto addr = asio::ip::make_address(options_.host, ec);
  if (ec) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("{}: bind address '{}' is not an IP address", options_.name, options_.host));
  }
  if (options_.security.tls_server()) KVPOOL_RETURN_IF_ERROR(LoadTls());
  auto listen_on = [&](uint16_t port) {
    if (acceptor_.is_open()) acceptor_.close();
    asio::ip::tcp::endpoint ep(addr, port);
    ec.clear();
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  };
  const auto [first, last] = options_.port_range;
  if (options_.port == 0 && first != 0 && first <= last) {
    const uint32_t count = static_cast<uint32_t>(last - first) + 1;
    const uint32_t start = std::random_device{}() % count;
    for (uint32_t i = 0; i < count; ++i) {
      listen_on(static_cast<uint16_t>(first + (start + i) % count));
      if (!ec || ec != asio::error::address_in_use) break;
    }
    if (ec == asio::error::address_in_use) {
      spdlog::info("{}: every port of {}-{} is taken; listening on any free port", options_.name,
                   first, last);
      listen_on(0);
    }
  } else {
    listen_on(options_.port);
  }
  if (ec) {
    return Status(ErrorCode::RPC_FAIL, fmt::format("{}: cannot listen on {}:{}: {}", options_.name,
                                                   options_.host, options_.port, ec.message()));
  }
  bound_port_ = acceptor_.local_endpoint().port();
  if (options_.security.auth_secret.empty() && !addr.is_loopback() && options_.protected_mode) {
    spdlog::warn(
        "{}: listening on {}:{} in PROTECTED MODE: no secret is set, so only peers on this host "
        "are served. Set the same secret on every process (--auth_secret_file FILE or ${}), or "
        "{} to serve unauthenticated peers from other hosts (docs/security.md).",
        options_.name, options_.host, bound_port_, kAuthSecretEnv, options_.insecure_hint);
  } else if (options_.security.auth_secret.empty() && !addr.is_loopback()) {
    spdlog::warn(
        "{}: listening on {}:{} WITHOUT AUTHENTICATION: anyone who can reach this port can read "
        "and overwrite the pool. Set --auth_secret_file FILE or ${} (docs/security.md).",
        options_.name, options_.host, bound_port_, kAuthSecretEnv);
  }
  asio::co_spawn(accept_strand_, AcceptLoop(), asio::detached);
  const int n = std::max(1, options_.threads);
  for (int i = 0; i < n; ++i) {
    asio::io_context* io = ios_[static_cast<size_t>(i) % ios_.size()].get();
    PollPlan* plan =
        options_.pin_connections ? &poll_plans_[static_cast<size_t>(i) % ios_.size()] : nullptr;
    threads_.emplace_back([io, spin = options_.idle_spin, plan] {
      // A pinned context must not return while it waits for its first connection.
      auto work = asio::make_work_guard(*io);
      RunPolling(*io, spin, plan);
    });
  }
  return Status::Ok();
}

void Server::Stop() {
  if (stopped_.exchange(true)) return;
  asio::post(accept_strand_, [this] {
    asio::error_code ec;
    acceptor_.close(ec);
  });
  for (auto& io : ios_) io->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Server::PlanPoll(const asio::any_io_executor& ex, const Reply& reply) {
  if (!options_.pin_connections || options_.idle_spin.count() <= 0) return;
  const bool poll = reply.next_request_within.count() > 0;
  if (!poll && reply.next_request_after <= options_.idle_spin) return;
  const auto* own = ex.target<asio::io_context::executor_type>();
  if (own == nullptr) return;
  for (size_t i = 0; i < ios_.size(); ++i) {
    if (&own->context() != ios_[i].get()) continue;
    PollPlan& plan = poll_plans_[i];
    if (!poll) {
      plan.sleep.store(true, std::memory_order_relaxed);
      return;
    }
    const Deadline until = Clock::now() + std::min(reply.next_request_within,
                                                   std::chrono::microseconds(kMaxSpinMicros));
    // Only the context's own thread writes it: the later of two announcements wins.
    if (plan.until.load(std::memory_order_relaxed) < until) {
      plan.until.store(until, std::memory_order_relaxed);
    }
    return;
  }
}

size_t Server::connections() const {
  std::lock_guard lock(slots_mu_);
  return connections_;
}

size_t Server::handshaking() const {
  std::lock_guard lock(slots_mu_);
  return handshaking_.size();
}

std::shared_ptr<Server::Slot> Server::Admit(const asio::any_io_executor& executor) {
  std::shared_ptr<Slot> victim;
  auto slot = std::make_shared<Slot>();
  slot->executor = executor;
  {
    std::lock_guard lock(slots_mu_);
    if (connections_ >= options_.max_connections) return nullptr;
    ++connections_;
    if (!handshaking_.empty() && handshaking_.size() >= options_.max_handshaking) {
      victim = handshaking_.front();
      handshaking_.pop_front();
      victim->listed = false;
    }
    slot->position = handshaking_.insert(handshaking_.end(), slot);
    slot->listed = true;
  }
  if (victim != nullptr) {
    asio::post(victim->executor, [victim, name = options_.name] {
      if (victim->stream == nullptr) return;
      spdlog::warn("{}: closing the oldest connection still in its handshake (too many are)", name);
      victim->stream->Close();
    });
  }
  return slot;
}

void Server::Trusted(Slot& slot) {
  std::lock_guard lock(slots_mu_);
  if (slot.listed) handshaking_.erase(slot.position);
  slot.listed = false;
}

void Server::Leave(Slot& slot) {
  std::lock_guard lock(slots_mu_);
  if (slot.listed) handshaking_.erase(slot.position);
  slot.listed = false;
  --connections_;
}

asio::awaitable<void> Server::AcceptLoop() {
  asio::steady_timer backoff(co_await asio::this_coro::executor);
  for (;;) {
    // Pinned: the connection's own thread is its strand. Shared: a strand keeps one
    // connection's handlers in order across the threads.
    asio::any_io_executor served_by;
    if (options_.pin_connections) {
      served_by = ios_[next_io_]->get_executor();
      next_io_ = (next_io_ + 1) % ios_.size();
    } else {
      served_by = asio::make_strand(*ios_.front());
    }
    auto [ec, socket] = co_await acceptor_.async_accept(served_by, kUseTuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
      spdlog::warn("{}: accept failed: {}", options_.name, ec.message());
      // Out of descriptors (or memory): pausing lets connections end instead of spinning.
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(kUseTuple);
      continue;
    }
    socket.set_option(asio::ip::tcp::no_delay(true), ec);
    socket.set_option(asio::socket_base::keep_alive(true), ec);
    // The executor first: the order of evaluation of the arguments is unspecified, and the
    // coroutine's parameter is moved from `socket`.
    auto executor = socket.get_executor();
    asio::co_spawn(executor, Accepted(std::move(socket)), asio::detached);
  }
}

}  // namespace kvpool::rpc

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
