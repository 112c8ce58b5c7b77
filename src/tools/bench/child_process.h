// A child process running this same binary (/proc/self/exe) with other arguments: the bench's
// private `kvpool master` / `kvpool node` processes and its TCP limit peer (or, for the Redis
// comparison, another program).
//
// Lifetime. The child gets its own process group (a terminal's Ctrl-C reaches only the bench,
// which then stops its children in order) and PR_SET_PDEATHSIG=SIGKILL, so it dies with the
// thread that started it even if the bench itself is SIGKILLed. REQUIRES: Start is called from a
// thread that outlives the child (the bench's main thread). The destructor stops and reaps it.
//
// Output. stdout and stderr go to a temporary log file, deleted by the destructor; LogTail()
// shows its end when the child fails.
//
// Threading: one thread at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kvpool/status.h"

namespace kvpool::tools::bench {

class ChildProcess {
 public:
  // Starts `/proc/self/exe args...`. `name` labels errors ("master", "node 1").
  // Errors: INTERNAL_ERROR when the log file or the fork fails.
  static Result<std::unique_ptr<ChildProcess>> Start(std::string name,
                                                     std::vector<std::string> args);
  // Starts another program (an absolute path, e.g. the Redis peer's redis-server) the same way.
  static Result<std::unique_ptr<ChildProcess>> StartProgram(std::string name, std::string program,
                                                            std::vector<std::string> args);
  ~ChildProcess();  // Stop(2 s)
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // SIGTERM, then SIGKILL if it has not exited after `grace`; reaps it. Idempotent.
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
  // The last `bytes` of what the child printed.
  std::string LogTail(size_t bytes = 2000) const;
  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }

 private:
  ChildProcess(std::string name, std::string log_path)
      : name_(std::move(name)), log_path_(std::move(log_path)) {}
  void Reaped(int wait_status, double cpu_seconds);
  // Forks and execs `program` with `argv_strings` (argv[0] included).
  static Result<std::unique_ptr<ChildProcess>> Spawn(std::string name, std::string program,
                                                     std::vector<std::string> argv_strings);

  std::string name_;
  std::string log_path_;
  pid_t pid_ = -1;
  int exit_status_ = -1;
  double final_cpu_ = 0;
};

}  // namespace kvpool::tools::bench
