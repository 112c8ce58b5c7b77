// A fixed set of worker threads that run the parts of one batch in parallel: the node spreads a
// large batch over its cores so copies into a client's pages run faster than one memcpy.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvpool::node {

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

}  // namespace kvpool::node
