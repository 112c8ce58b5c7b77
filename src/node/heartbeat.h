// Keeps a process alive in the master's eyes: pings every interval and, when the master does
// not know the client (first contact, or the master restarted), calls `on_unknown` so the
// caller can mount its segments again. Owns one thread; Stop() (or the destructor) joins it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/time.h"
#include "master/master_client.h"

namespace kvpool::node {

class Heartbeat {
 public:
  // `master` must outlive the heartbeat. `on_unknown` runs on the heartbeat thread.
  Heartbeat(master::MasterClient* master, Clock::duration interval, Clock::duration rpc_timeout,
            std::function<void()> on_unknown);
  ~Heartbeat();
  void Start();
  void Stop();

  // True when the last ping was answered.
  bool master_reachable() const { return reachable_.load(); }

 private:
  void Run();
  void PingOnce();

  master::MasterClient* master_;
  const Clock::duration interval_;
  const Clock::duration rpc_timeout_;
  std::function<void()> on_unknown_;
  std::atomic<bool> reachable_{true};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace kvpool::node
