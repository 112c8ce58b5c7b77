// A fixed set of worker threads that run the parts of one batch in parallel: the node and the
// client spread a large batch over their cores so copies run faster than one memcpy, and a
// client keeps several transfers in flight at once.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvpool {

class TaskPool {
 public:
  // `threads` workers; 0 runs everything on the calling thread.
  explicit TaskPool(int threads);
  ~TaskPool();  // joins the workers (ParallelFor calls must have returned)
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  // Runs fn(0) .. fn(n-1) on the workers and the calling thread; returns when all have run.
  // `fn` must not throw.
  void ParallelFor(size_t n, const std::function<void(size_t)>& fn);
  int threads() const { return static_cast<int>(workers_.size()); }

 private:
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace kvpool
