// Sends a client's finished read leases to the master when no request of its own carries them
// soon enough (master::MasterClient::ReleaseLease). Off the get path: a get only queues its
// lease id; this thread sends what no request picked up within `delay`, in one LEASE_RELEASE.
// So a busy reader piggybacks every release on its next request, and an idle one releases
// within about `delay` plus a round trip.
//
// Threading: owns one thread, started by the constructor; Stop() (or the destructor) joins it.
// `master` must outlive the flusher.
#pragma once

#include <atomic>
#include <thread>

#include "common/time.h"
#include "master_client/master_client.h"

namespace kvpool::client {

class LeaseFlusher {
 public:
  LeaseFlusher(master::MasterClient* master, Clock::duration delay, Clock::duration rpc_timeout);
  ~LeaseFlusher();
  LeaseFlusher(const LeaseFlusher&) = delete;
  LeaseFlusher& operator=(const LeaseFlusher&) = delete;

  // Joins the thread; queued releases stay queued (the caller may flush them once more).
  void Stop();

 private:
  void Run();

  master::MasterClient* const master_;
  const Clock::duration delay_;
  const Clock::duration rpc_timeout_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace kvpool::client
