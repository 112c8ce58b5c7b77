// Brief polling before a thread sleeps. On the VMs kvpool runs on, a thread that sleeps lets
// its vCPU halt, and waking that vCPU costs tens of microseconds: more than a small RPC's whole
// work. A caller expecting its event within microseconds (a reply, the next request) looks for
// it for a bounded time first. Between looks the thread yields, so any runnable thread (perhaps
// the very peer it waits for) goes first: the poll only takes time the CPU would spend idle.
#pragma once

#include <sched.h>

#include <chrono>

#include "common/time.h"

namespace kvpool {

// The longest poll any option may ask for (client reply_spin_us, master --rpc_idle_spin_us):
// beyond 10 ms a poll stops paying for itself against a sleep's wake-up.
inline constexpr int kMaxSpinMicros = 10000;

// Calls `ready()` until it returns true or `budget` has passed, yielding between calls; returns
// the last result. A budget <= 0 looks once. Thread-safe as `ready` is; never sleeps.
template <typename Ready>
bool SpinUntil(std::chrono::microseconds budget, Ready&& ready) {
  if (ready()) return true;
  if (budget.count() <= 0) return false;
  const Deadline until = Clock::now() + budget;
  for (;;) {
    sched_yield();
    if (ready()) return true;
    if (Clock::now() >= until) return false;
  }
}

}  // namespace kvpool
