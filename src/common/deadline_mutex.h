// A mutex whose lock gives up at a deadline (a link that is re-attaching must not hold a caller
// past its deadline).
//
// Why not std::timed_mutex: libstdc++ implements its try_lock_until(steady_clock) with
// pthread_mutex_clocklock, which ThreadSanitizer (clang 14) does not intercept. TSan then sees
// unlocks of a mutex it never saw locked and reports races on everything the mutex guards,
// which hides real ones. This is a flag guarded by a std::mutex and a condition variable, which
// every sanitizer understands; a waiter sleeps, it never spins.
//
// Threading: any thread may lock; only the holder unlocks. Meets Lockable and TimedLockable
// (std::unique_lock, std::lock_guard). Not recursive.
#pragma once

#include <condition_variable>
#include <mutex>

#include "common/time.h"

namespace kvpool {

class DeadlineMutex {
 public:
  void lock() {
    std::unique_lock<std::mutex> l(mu_);
    free_.wait(l, [this] { return !held_; });
    held_ = true;
  }
  bool try_lock() {
    std::lock_guard<std::mutex> l(mu_);
    if (held_) return false;
    held_ = true;
    return true;
  }
  // False, without the lock, when it is still held by another thread at `deadline`.
  bool try_lock_until(Deadline deadline) {
    std::unique_lock<std::mutex> l(mu_);
    if (!free_.wait_until(l, deadline, [this] { return !held_; })) return false;
    held_ = true;
    return true;
  }
  void unlock() {
    {
      std::lock_guard<std::mutex> l(mu_);
      held_ = false;
    }
    free_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable free_;
  bool held_ = false;  // guarded by mu_
};

}  // namespace kvpool
