#include "ha/leader_locator.h"

#include <fmt/format.h>

namespace kvpool::ha {

// A locator only reads who leads: the lease TTL is never used.
LeaderLocator::LeaderLocator(const EtcdTarget& target)
    : coordinator_(MakeEtcdCoordinator(target, std::chrono::seconds(1))) {}

LeaderLocator::LeaderLocator(std::unique_ptr<Coordinator> coordinator)
    : coordinator_(std::move(coordinator)) {}

Result<rpc::Endpoint> LeaderLocator::Current(Deadline deadline) {
  {
    std::lock_guard lock(mu_);
    if (cached_) return *cached_;
  }
  auto leader = coordinator_->Leader(deadline);
  if (!leader.ok()) {
    return Status(leader.code(), fmt::format("finding the master leader through {}: {}", Describe(),
                                             leader.status().message()));
  }
  if (leader->epoch == 0) {
    return Status(ErrorCode::NOT_LEADER,
                  fmt::format("no master leads {} now (an election may be under way)", Describe()));
  }
  auto ep = rpc::ParseEndpoint(leader->address, 0,
                               fmt::format("master leader address published in {}", Describe()));
  if (!ep.ok()) return ep.status();
  Observe(leader->epoch);
  std::lock_guard lock(mu_);
  cached_ = *ep;
  return *ep;
}

void LeaderLocator::Forget(const rpc::Endpoint& failed) {
  std::lock_guard lock(mu_);
  if (cached_ && cached_->host == failed.host && cached_->port == failed.port) cached_.reset();
}

bool LeaderLocator::Observe(uint64_t epoch) {
  if (epoch == 0) return true;
  uint64_t seen = newest_.load(std::memory_order_acquire);
  while (epoch > seen && !newest_.compare_exchange_weak(seen, epoch)) {
  }
  return epoch >= seen;
}

}  // namespace kvpool::ha
