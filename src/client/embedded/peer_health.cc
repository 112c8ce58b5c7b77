#include "client/embedded/peer_health.h"

#include <spdlog/spdlog.h>

namespace kvpool::client {

bool PeerHealth::MeansSilent(ErrorCode code) {
  return code == ErrorCode::RPC_TIMEOUT || code == ErrorCode::RPC_FAIL;
}

void PeerHealth::Note(const std::string& endpoint, const Status& outcome, Clock::time_point now) {
  if (outcome.ok() && !AnySilent()) return;  // nothing to clear
  std::lock_guard lock(mu_);
  auto it = silent_until_.find(endpoint);
  if (outcome.ok()) {
    if (it == silent_until_.end()) return;
    silent_until_.erase(it);
    entries_.store(silent_until_.size(), std::memory_order_relaxed);
    ++counters_.recovered;
    spdlog::info("segment host {} answers again", endpoint);
    return;
  }
  if (!MeansSilent(outcome.code())) return;
  ++counters_.marked_silent;
  if (it == silent_until_.end() || it->second <= now) {
    spdlog::warn(
        "segment host {} is silent from this client: its replicas are read last for "
        "{} ms: error={}",
        endpoint, std::chrono::duration_cast<Millis>(avoid_for_).count(), outcome.ToString());
  }
  silent_until_[endpoint] = now + avoid_for_;
  entries_.store(silent_until_.size(), std::memory_order_relaxed);
}

bool PeerHealth::Avoided(const std::string& endpoint, Clock::time_point now) const {
  if (!AnySilent()) return false;
  std::lock_guard lock(mu_);
  auto it = silent_until_.find(endpoint);
  return it != silent_until_.end() && it->second > now;
}

PeerHealth::Counters PeerHealth::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::vector<std::string> PeerHealth::AvoidedNow(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [endpoint, until] : silent_until_) {
    if (until > now) out.push_back(endpoint);
  }
  return out;
}

}  // namespace kvpool::client
