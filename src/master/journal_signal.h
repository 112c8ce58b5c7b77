// Wakes the pings that long-poll for segment journal entries (MasterService) the moment a
// journal grows, so a waiting ping costs no CPU: an idle pool's master sleeps between
// heartbeats instead of polling every segment's journal.
//
// Threading: thread-safe. Notify() may be called with a segment's lock held: it takes only its
// own lock and runs the wakers, which must be short and must not call back into the registry
// (MasterService's waker posts a timer cancel to the waiter's executor).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace kvpool::master {

class JournalSignal {
 public:
  using Waker = std::function<void()>;

  // Registers `wake`, run once at the next Notify(). Returns an id for Unsubscribe. Subscribe,
  // then check for entries, then wait: an entry appended in between is not missed.
  uint64_t Subscribe(Waker wake);
  // Forgets a subscription (a no-op when Notify already ran it).
  void Unsubscribe(uint64_t id);
  // Runs and forgets every subscribed waker. Cheap when nobody waits (one atomic load).
  void Notify();

 private:
  std::mutex mu_;
  std::atomic<size_t> waiting_{0};
  uint64_t next_id_ = 1;
  std::map<uint64_t, Waker> wakers_;  // guarded by mu_
};

}  // namespace kvpool::master
