// Test support: real `kvpool` processes on 127.0.0.1 with free ports, killed and reaped when the
// test ends (also when it fails), output kept in a temp log shown on failure.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/child_process.h"

namespace kvpool::testing {

// A port that was free a moment ago on 127.0.0.1 (kvpool::FreeLoopbackPort).
inline uint16_t FreePort() { return FreeLoopbackPort(); }
// True once something accepts TCP connections on 127.0.0.1:port, false after `timeout`.
inline bool WaitForPort(uint16_t port, std::chrono::milliseconds timeout) {
  return WaitForLoopbackPort(port, timeout);
}

// A test's process: kvpool::ChildProcess (common/child_process.h) that is SIGKILLed, as kill -9,
// when it goes out of scope, and whose failure to start shows as a process that is not running.
class Process {
 public:
  // Starts `binary args...` with stdout and stderr in a log file.
  Process(const std::string& binary, std::vector<std::string> args, std::string name);
  ~Process() = default;  // SIGKILL if still running, then reap
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  void Signal(int sig) {
    if (child_) child_->Signal(sig);
  }
  // SIGSTOP / SIGCONT that return only once the kernel shows the process stopped / running.
  void Pause() {
    if (child_) child_->Pause();
  }
  void Resume() {
    if (child_) child_->Resume();
  }
  // Waits up to `timeout` for the process to exit; returns its exit status (-1 on timeout,
  // 128+signal when killed by a signal).
  int Wait(std::chrono::milliseconds timeout);
  bool running() { return child_ && child_->Running(); }
  std::string Log() const;  // what it printed so far (or why it did not start)
  // True once Log() contains `text` (within `timeout`): log lines may land a moment later.
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout) {
    return child_ && child_->WaitForLog(text, timeout);
  }
  pid_t pid() const { return child_ ? child_->pid() : -1; }

 private:
  std::unique_ptr<ChildProcess> child_;  // null when the start failed
  std::string start_error_;
};

// Runs `binary args...` to completion (bounded by `timeout`), returning exit code and output.
struct RunResult {
  int exit_code;
  std::string output;
};
RunResult RunCommand(const std::string& binary, const std::vector<std::string>& args,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace kvpool::testing
