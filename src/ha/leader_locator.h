// Where a client or node finds the master when its address is etcd://…: the current leader's
// RPC endpoint, asked of the coordinator and cached until a call to it fails or is refused.
// Also keeps the newest leadership epoch seen, so that an answer from an older leader (a
// paused master that resumed) is not believed.
//
// Threading: thread-safe; Current may block on the coordinator up to its deadline.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/time.h"
#include "ha/coordinator.h"
#include "rpc/endpoint.h"

namespace kvpool::ha {

class LeaderLocator {
 public:
  explicit LeaderLocator(const EtcdTarget& target);
  explicit LeaderLocator(std::unique_ptr<Coordinator> coordinator);

  // The leader's endpoint (cached, or asked of etcd). Errors: NOT_LEADER when no master leads
  // the cluster now (an election is under way); ETCD_OPERATION_ERROR / RPC_TIMEOUT when etcd
  // does not answer; INVALID_PARAMS when the published address does not parse. Each names the
  // etcd:// address.
  Result<rpc::Endpoint> Current(Deadline deadline);
  // A call to `failed` failed or was refused: the next Current asks etcd again (unless another
  // thread already learned of a newer leader).
  void Forget(const rpc::Endpoint& failed);
  // Records the leadership epoch of an answer. false when it is older than the newest seen
  // (the answer must not be believed). 0 (a master without HA) is always accepted.
  bool Observe(uint64_t epoch);
  uint64_t newest_epoch() const { return newest_.load(std::memory_order_acquire); }
  std::string Describe() const { return coordinator_->Describe(); }

 private:
  const std::unique_ptr<Coordinator> coordinator_;
  std::mutex mu_;
  std::optional<rpc::Endpoint> cached_;  // guarded by mu_
  std::atomic<uint64_t> newest_{0};
};

}  // namespace kvpool::ha
