// One launcher for the processes kvpool's own tools start: the bench's private master and nodes,
// its TCP-limit peer and Redis, and the integration tests' `kvpool` processes. Also the
// loopback port helpers both need. Not used by the roles themselves (master, node, client).
//
// Output. stdout and stderr go to a temporary log file (stdin is /dev/null), deleted by the
// destructor; Log() / LogTail() read it while the child runs.
//
// Lifetime. The destructor stops the child (SIGTERM, then SIGKILL after the options' grace;
// grace 0 means SIGKILL at once, as a test's kill -9) and reaps it. With
// `die_with_parent_thread`, the child also gets PR_SET_PDEATHSIG=SIGKILL, so it dies with the
// *thread* that started it even if this process is SIGKILLed: start such children only from a
// thread that outlives them (the bench's main thread). With `own_process_group`, a terminal's
// Ctrl-C reaches only this process, which then stops its children in order.
//
// Threading: one thread at a time per ChildProcess.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kvpool/status.h"

namespace kvpool {

struct ChildOptions {
  bool die_with_parent_thread = false;  // PR_SET_PDEATHSIG=SIGKILL (see the file comment)
  bool own_process_group = false;       // setpgid(0, 0)
  // What the destructor gives the child between SIGTERM and SIGKILL (0: SIGKILL at once).
  std::chrono::milliseconds stop_grace{2000};
};

class ChildProcess {
 public:
  // Starts `program args...` (program: a path; argv[0] is `program`). `name` labels errors
  // ("master", "node 1"). Errors: INTERNAL_ERROR when the log file or the fork fails.
  static Result<std::unique_ptr<ChildProcess>> Start(std::string name, const std::string& program,
                                                     std::vector<std::string> args,
                                                     ChildOptions options = {});
  // Starts this same binary (/proc/self/exe) with `args`, argv[0] "kvpool".
  static Result<std::unique_ptr<ChildProcess>> StartSelf(std::string name,
                                                         std::vector<std::string> args,
                                                         ChildOptions options = {});
  ~ChildProcess();  // Stop(options.stop_grace), then the log file is removed
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Sends `sig` (nothing once reaped).
  void Signal(int sig);
  // SIGSTOP / SIGCONT that return only once the kernel shows the process stopped / running
  // (within 5 s): a signal is delivered asynchronously, and a test must not race it.
  void Pause();
  void Resume();
  // SIGTERM, then SIGKILL if it has not exited after `grace` (0: SIGKILL at once); reaps it.
  // Idempotent.
  void Stop(std::chrono::milliseconds grace);
  // Waits up to `timeout` for the child to exit by itself. True once it has been reaped.
  bool WaitExit(std::chrono::milliseconds timeout);
  // False once the child has exited (it is then reaped).
  bool Running();
  // Exit code, 128+signal when killed; -1 while running.
  int exit_status() const { return exit_status_; }
  // CPU seconds (user + system) the child used so far: from /proc while it runs, from its
  // rusage once reaped.
  double CpuSeconds() const;
  // Resident memory of the child now (/proc/PID/statm; 0 once reaped or unreadable).
  uint64_t ResidentBytes() const;
  // What the child printed so far, and its last `bytes`.
  std::string Log() const;
  std::string LogTail(size_t bytes = 2000) const;
  // True once Log() contains `text` (within `timeout`): log lines may land a moment later.
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout);
  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }

 private:
  ChildProcess(std::string name, std::string log_path, ChildOptions options)
      : name_(std::move(name)), log_path_(std::move(log_path)), options_(options) {}
  void Reaped(int wait_status, double cpu_seconds);
  // Forks and execs `program` with `argv_strings` (argv[0] included).
  static Result<std::unique_ptr<ChildProcess>> Spawn(std::string name, const std::string& program,
                                                     std::vector<std::string> argv_strings,
                                                     ChildOptions options);

  std::string name_;
  std::string log_path_;
  ChildOptions options_;
  pid_t pid_ = -1;
  int exit_status_ = -1;
  double final_cpu_ = 0;
};

// A port that was free on 127.0.0.1 a moment ago (0 when none could be bound). Chosen at random
// below the kernel's ephemeral range where it can: the kernel hands ports in that range to
// outgoing connections and to servers binding port 0, which could take it before the caller's
// process binds it, and parallel callers must not pick the same one.
uint16_t FreeLoopbackPort();
// True when something accepts TCP connections on 127.0.0.1:`port` now.
bool LoopbackAccepts(uint16_t port);
// Polls LoopbackAccepts every 20 ms; false after `timeout`.
bool WaitForLoopbackPort(uint16_t port, std::chrono::milliseconds timeout);

}  // namespace kvpool
