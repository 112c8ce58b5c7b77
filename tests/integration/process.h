// Test support: real `kvpool` processes on 127.0.0.1 with free ports, killed and reaped when the
// test ends (also when it fails), output kept in a temp log shown on failure.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace kvpool::testing {

// A port that was free a moment ago on 127.0.0.1, chosen below the kernel's ephemeral range.
uint16_t FreePort();
// True once something accepts TCP connections on 127.0.0.1:port, false after `timeout`.
bool WaitForPort(uint16_t port, std::chrono::milliseconds timeout);

class Process {
 public:
  // Starts `binary args...` with stdout and stderr in a log file.
  Process(const std::string& binary, std::vector<std::string> args, std::string name);
  ~Process();  // SIGKILL if still running, then reap
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  void Signal(int sig);
  // SIGSTOP / SIGCONT that return only once the kernel shows the process stopped / running
  // (a signal is delivered asynchronously; a test must not race it).
  void Pause();
  void Resume();
  // Waits up to `timeout` for the process to exit; returns its exit status (-1 on timeout,
  // 128+signal when killed by a signal).
  int Wait(std::chrono::milliseconds timeout);
  bool running();
  std::string Log() const;  // what it printed so far
  // True once Log() contains `text` (within `timeout`): log lines may land a moment later.
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  std::string name_;
  std::string log_path_;
  pid_t pid_ = -1;
  int status_ = -1;
};

// Runs `binary args...` to completion (bounded by `timeout`), returning exit code and output.
struct RunResult {
  int exit_code;
  std::string output;
};
RunResult RunCommand(const std::string& binary, const std::vector<std::string>& args,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace kvpool::testing
