#include "tools/bench/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace kvpool::tools::bench {
namespace {

double RusageSeconds(const rusage& ru) {
  auto sec = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

// Runs in the forked child: only async-signal-safe calls until execv.
[[noreturn]] void ExecChild(pid_t parent, int log_fd, const char* program, char** argv) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  ::setpgid(0, 0);
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // main() blocked the termination signals
  ::signal(SIGPIPE, SIG_DFL);
  ::execv(program, argv);
  ::_exit(127);
}

}  // namespace

Result<std::unique_ptr<ChildProcess>> ChildProcess::Start(std::string name,
                                                          std::vector<std::string> args) {
  args.insert(args.begin(), "kvpool");
  return Spawn(std::move(name), "/proc/self/exe", std::move(args));
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::StartProgram(std::string name,
                                                                 std::string program,
                                                                 std::vector<std::string> args) {
  args.insert(args.begin(), program);
  return Spawn(std::move(name), std::move(program), std::move(args));
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(std::string name, std::string program,
                                                          std::vector<std::string> argv_strings) {
  char tmpl[] = "/tmp/kvpool-bench-XXXXXX";
  int log_fd = ::mkstemp(tmpl);
  if (log_fd < 0) {
    return Status(ErrorCode::INTERNAL_ERROR,
                  fmt::format("{}: cannot create a log file in /tmp", name));
  }
  std::unique_ptr<ChildProcess> child(new ChildProcess(std::move(name), tmpl));
  // Everything the child needs is built before fork: no allocation after it.
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) ExecChild(parent, log_fd, program.c_str(), argv.data());
  ::close(log_fd);
  if (pid < 0) {
    return Status(ErrorCode::INTERNAL_ERROR, fmt::format("{}: fork failed", child->name_));
  }
  child->pid_ = pid;
  return child;
}

ChildProcess::~ChildProcess() {
  Stop(std::chrono::seconds(2));
  ::unlink(log_path_.c_str());
}

void ChildProcess::Reaped(int wait_status, double cpu_seconds) {
  exit_status_ = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
  final_cpu_ = cpu_seconds;
}

bool ChildProcess::Running() {
  if (pid_ <= 0 || exit_status_ != -1) return false;
  int st = 0;
  rusage ru{};
  pid_t r = ::wait4(pid_, &st, WNOHANG, &ru);
  if (r == pid_) {
    Reaped(st, RusageSeconds(ru));
    return false;
  }
  return r == 0;
}

bool ChildProcess::WaitExit(std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (Running()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (!Running()) return;
  ::kill(pid_, SIGTERM);
  if (WaitExit(grace)) return;
  ::kill(pid_, SIGKILL);
  WaitExit(std::chrono::seconds(10));
}

double ChildProcess::CpuSeconds() const {
  if (exit_status_ != -1 || pid_ <= 0) return final_cpu_;
  std::ifstream in(fmt::format("/proc/{}/stat", pid_));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the ")" that closes the command name: state is field 3; utime, stime are 14, 15.
  size_t close = text.rfind(')');
  if (close == std::string::npos) return final_cpu_;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::strtoull(f.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(f.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::string ChildProcess::LogTail(size_t bytes) const {
  std::ifstream in(log_path_);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

}  // namespace kvpool::tools::bench
