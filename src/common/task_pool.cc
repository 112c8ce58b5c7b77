#include "common/task_pool.h"

#include <atomic>
#include <memory>

namespace kvpool {

TaskPool::TaskPool(int threads) {
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void TaskPool::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    auto task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

void TaskPool::ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  struct Shared {
    std::atomic<size_t> next{0};
    size_t done = 0;  // guarded by mu
    std::mutex mu;
    std::condition_variable cv;
  };
  auto shared = std::make_shared<Shared>();
  // Takes parts until none is left; `fn` outlives every call because the caller waits below.
  auto drain = [shared, n, &fn] {
    for (size_t i; (i = shared->next.fetch_add(1)) < n;) {
      fn(i);
      std::lock_guard<std::mutex> lock(shared->mu);
      if (++shared->done == n) shared->cv.notify_all();
    }
  };
  const size_t helpers = std::min(n - 1, workers_.size());
  if (helpers > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t h = 0; h < helpers; ++h) queue_.emplace_back(drain);
  }
  cv_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->done == n; });
}

}  // namespace kvpool
