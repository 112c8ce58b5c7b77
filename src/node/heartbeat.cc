#include "node/heartbeat.h"

#include <spdlog/spdlog.h>

namespace kvpool::node {

Heartbeat::Heartbeat(master::MasterClient* master, Clock::duration interval,
                     Clock::duration rpc_timeout, std::function<void()> on_unknown)
    : master_(master),
      interval_(interval),
      rpc_timeout_(rpc_timeout),
      on_unknown_(std::move(on_unknown)) {}

Heartbeat::~Heartbeat() { Stop(); }

void Heartbeat::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Heartbeat::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::PingOnce() {
  auto r = master_->Ping(DeadlineAfter(rpc_timeout_));
  if (!r.ok()) {
    if (reachable_.exchange(false)) {
      spdlog::warn("master unreachable: error={} (retrying every {} ms)", r.status().ToString(),
                   std::chrono::duration_cast<Millis>(interval_).count());
    }
    return;
  }
  if (!reachable_.exchange(true)) spdlog::info("master reachable again");
  if (!r->client_known() && on_unknown_) on_unknown_();
}

void Heartbeat::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    PingOnce();
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

}  // namespace kvpool::node
