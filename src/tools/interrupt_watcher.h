// Ctrl-C and SIGTERM for the client commands (put, get, exists, rm, stat). `kvpool` blocks
// SIGINT, SIGTERM and SIGHUP in every thread first thing in main (BlockTerminationSignals, for
// the roles that sigwait), so without a watcher those signals stay pending while a command waits
// out its deadline. The watcher takes them from a signalfd on its own thread and ends the
// process at once: it removes the partial output file it was given, prints
// "kvpool CMD: interrupted by SIGINT" to stderr and exits 128 + the signal number (130 for
// SIGINT, 143 for SIGTERM, 129 for SIGHUP), like a shell reports a process killed by it.
// What the process held dies with it: its connections close, and a put cut short mid-way is
// left pending at the master until --put_start_discard_timeout_sec.
#pragma once

#include <mutex>
#include <string>
#include <thread>

namespace kvpool::tools {

class InterruptWatcher {
 public:
  // Starts watching (REQUIRES: the signals are blocked in every thread, as main does).
  // `command` names the command in the message.
  explicit InterruptWatcher(std::string command);
  // Stops watching and joins the thread; a signal that arrives later stays pending.
  ~InterruptWatcher();
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

  // The regular file being written (a get's FILE) to remove if a signal ends the command; ""
  // when none. Thread-safe.
  void SetPartialOutput(std::string path);

 private:
  void Run();

  const std::string command_;
  int signal_fd_ = -1;  // the terminating signals
  int stop_fd_ = -1;    // eventfd: the destructor's wake-up
  std::mutex mu_;
  std::string partial_output_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace kvpool::tools
