#include "master/journal_signal.h"

#include <utility>
#include <vector>

namespace kvpool::master {

uint64_t JournalSignal::Subscribe(Waker wake) {
  std::lock_guard lock(mu_);
  uint64_t id = next_id_++;
  wakers_.emplace(id, std::move(wake));
  waiting_.store(wakers_.size(), std::memory_order_release);
  return id;
}

void JournalSignal::Unsubscribe(uint64_t id) {
  std::lock_guard lock(mu_);
  wakers_.erase(id);
  waiting_.store(wakers_.size(), std::memory_order_release);
}

void JournalSignal::Notify() {
  if (waiting_.load(std::memory_order_acquire) == 0) return;
  std::map<uint64_t, Waker> due;
  {
    std::lock_guard lock(mu_);
    due.swap(wakers_);
    waiting_.store(0, std::memory_order_release);
  }
  for (auto& [id, wake] : due) wake();
}

}  // namespace kvpool::master
