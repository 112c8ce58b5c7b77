// Ctrl-C for the bench: turns SIGINT / SIGTERM / SIGHUP into a stop request that every loop of
// the bench polls, so it stops its workloads, prints what it measured and stops its child
// processes. A second signal exits at once (the children die with the bench: PDEATHSIG).
//
// REQUIRES: the termination signals are blocked in every thread (main() calls
// BlockTerminationSignals() first). The watcher thread sleeps in poll(): no busy waiting.
#pragma once

#include <atomic>
#include <stop_token>
#include <thread>

namespace kvpool::tools::bench {

class InterruptWatcher {
 public:
  InterruptWatcher();   // starts the watcher thread
  ~InterruptWatcher();  // wakes and joins it
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

  std::stop_token token() const { return source_.get_token(); }
  // The signal that asked to stop, 0 when none arrived.
  int signal() const { return signal_.load(); }

 private:
  void Watch();

  std::stop_source source_;
  std::atomic<int> signal_{0};
  int signal_fd_ = -1;
  int wake_fd_ = -1;  // eventfd written by the destructor
  std::thread thread_;
};

}  // namespace kvpool::tools::bench
