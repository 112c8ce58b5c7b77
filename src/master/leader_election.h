// Master high availability: this master's part in the election of its cluster's leader
// (ha/coordinator.h), and the gate that lets only a leader holding a fresh lease serve.
//
// A thread campaigns (standby: every poll_interval it asks who leads and takes over once the
// leader's lease lapsed), and as leader renews the lease every ttl/3. The leader serves only
// until `last renewal sent + ttl - fence_margin`: the coordinator cannot expire the lease before
// `sent + ttl`, so a leader that cannot renew (coordinator unreachable, process paused) stops
// serving at least fence_margin before a standby can win. Leadership once lost is never taken
// back by the same process: it reports lost() (the `kvpool master` command then exits, and its
// supervisor restarts it as a standby with an empty table), so no state of an old term can leak
// into a new one.
//
// A new leader first lets the nodes re-register (the restore path of a master restart:
// master_restore.cc) for restore_wait, answering only node traffic (ping, mount, unmount, drain,
// stat); key requests get UNAVAILABLE_IN_CURRENT_STATUS until then, which clients retry.
//
// Threading: Admit and view are thread-safe and lock-free on the serving path (atomics).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/time.h"
#include "ha/coordinator.h"
#include "kvpool/status.h"

namespace kvpool::master {

struct ElectionOptions {
  Clock::duration poll_interval = std::chrono::milliseconds(250);
  // Served time given up before the lease could lapse. Default: a third of the TTL.
  Clock::duration fence_margin{0};
  Clock::duration restore_wait = std::chrono::milliseconds(2000);
};

// What /health, /metrics and STAT show.
struct HaView {
  std::string role;     // "leader", "standby", "restoring" (leader, nodes re-registering), "lost"
  uint64_t epoch = 0;   // the leadership epoch of the leader known (0: none known)
  std::string leader;   // its address ("" when none known)
  std::string cluster;  // the coordinator, "etcd://…/cluster"
};

class LeaderElection {
 public:
  // `on_lost` runs once, on the election thread, when leadership is lost.
  LeaderElection(std::unique_ptr<ha::Coordinator> coordinator, ElectionOptions options,
                 std::function<void()> on_lost);
  ~LeaderElection();  // Stop()s

  // Replaces on_lost (before Start).
  void SetOnLost(std::function<void()> on_lost) { on_lost_ = std::move(on_lost); }
  // One look at the coordinator within `deadline` (a bad or unreachable etcd fails start-up:
  // ETCD_OPERATION_ERROR / RPC_TIMEOUT naming the address), then the election thread, which
  // publishes `advertise_address` (host:port of this master's RPC server) when it wins.
  Status Start(std::string advertise_address, Deadline deadline);
  // Ends the thread; a leader resigns (revokes its lease) so a standby takes over at once.
  void Stop();

  // OK when this master may answer `method` now; else NOT_LEADER (standby, lease lost or stale:
  // the message names the leader known) or UNAVAILABLE_IN_CURRENT_STATUS (restoring).
  Status Admit(uint16_t method) const;
  // The epoch to stamp on answers (0 unless leading).
  uint64_t serving_epoch() const { return epoch_.load(std::memory_order_acquire); }
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  HaView view() const;

 private:
  enum class Role : int { kStandby = 0, kLeader = 1, kLost = 2 };

  void Run();
  void StandbyStep();
  bool LeaderStep();  // true when the lease was renewed
  void Lose(const std::string& why);
  // Waits `d` or until Stop(); false when stopping.
  bool Sleep(Clock::duration d);
  bool Fresh(Clock::time_point now) const;
  std::string advertise() const;

  const std::unique_ptr<ha::Coordinator> coordinator_;
  const ElectionOptions options_;
  std::function<void()> on_lost_;  // set before Start
  const Clock::duration ttl_;

  std::atomic<int> role_{0};
  std::atomic<uint64_t> epoch_{0};          // ours while leading
  std::atomic<int64_t> serve_until_ns_{0};  // steady-clock ns: lease fresh until then
  std::atomic<int64_t> restore_until_ns_{0};
  std::atomic<bool> lost_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;       // guarded by mu_
  ha::LeaderRecord known_;  // guarded by mu_: the leader last seen
  std::string advertise_;   // guarded by mu_: set by Start
  std::string last_error_;  // guarded by mu_: for logs, once per distinct error
  std::thread thread_;
};

}  // namespace kvpool::master
