#include "client/embedded/lease_flusher.h"

#include <spdlog/spdlog.h>

namespace kvpool::client {

LeaseFlusher::LeaseFlusher(master::MasterClient* master, Clock::duration delay,
                           Clock::duration rpc_timeout)
    : master_(master), delay_(delay), rpc_timeout_(rpc_timeout), thread_([this] { Run(); }) {}

LeaseFlusher::~LeaseFlusher() { Stop(); }

void LeaseFlusher::Stop() {
  stop_.store(true);
  master_->StopReleaseWaits();
  if (thread_.joinable()) thread_.join();
}

void LeaseFlusher::Run() {
  while (!stop_.load()) {
    // The bounded wait only re-checks stop_; StopReleaseWaits wakes it at once anyway.
    if (!master_->WaitForStaleReleases(delay_, DeadlineAfter(std::chrono::seconds(1)))) continue;
    Status st = master_->FlushLeaseReleases(DeadlineAfter(rpc_timeout_));
    if (!st.ok()) {
      // Kept queued for the next request or flush; the master's TTL bounds them meanwhile.
      spdlog::debug("lease release failed: error={}", st.ToString());
      std::this_thread::sleep_for(delay_);  // not a busy loop while the master is away
    }
  }
}

}  // namespace kvpool::client
