#include "common/child_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

namespace kvpool {
namespace {

double RusageSeconds(const rusage& ru) {
  auto sec = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

// Runs in the forked child: only async-signal-safe calls until execv.
[[noreturn]] void ExecChild(const ChildOptions& o, pid_t parent, int log_fd, const char* program,
                            char** argv) {
  if (o.die_with_parent_thread) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  }
  if (o.own_process_group) ::setpgid(0, 0);
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the parent may have blocked signals
  ::signal(SIGPIPE, SIG_DFL);
  ::execv(program, argv);
  ::_exit(127);
}

// The state letter of /proc/PID/stat ('R', 'S', 'T', ...), or 0 when unreadable.
char ProcState(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  std::getline(in, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : 0;
}

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// Binds 127.0.0.1:`port` (0: any) and returns the bound port, or 0 when it is taken.
uint16_t TryBind(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a = Loopback(port);
  socklen_t len = sizeof(a);
  uint16_t bound = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    bound = ntohs(a.sin_port);
  }
  ::close(fd);
  return bound;
}

// The low end of the kernel's ephemeral range (0 when unreadable).
int EphemeralLow() {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  return (f >> low) ? low : 0;
}

}  // namespace

Result<std::unique_ptr<ChildProcess>> ChildProcess::StartSelf(std::string name,
                                                              std::vector<std::string> args,
                                                              ChildOptions options) {
  args.insert(args.begin(), "kvpool");
  return Spawn(std::move(name), "/proc/self/exe", std::move(args), options);
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::Start(std::string name,
                                                          const std::string& program,
                                                          std::vector<std::string> args,
                                                          ChildOptions options) {
  args.insert(args.begin(), program);
  return Spawn(std::move(name), program, std::move(args), options);
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(std::string name,
                                                          const std::string& program,
                                                          std::vector<std::string> argv_strings,
                                                          ChildOptions options) {
  char tmpl[] = "/tmp/kvpool-child-XXXXXX";
  int log_fd = ::mkostemp(tmpl, O_CLOEXEC);
  if (log_fd < 0) {
    return Status(ErrorCode::INTERNAL_ERROR,
                  fmt::format("{}: cannot create a log file in /tmp", name));
  }
  std::unique_ptr<ChildProcess> child(new ChildProcess(std::move(name), tmpl, options));
  // Everything the child needs is built before fork: no allocation after it.
  std::vector<char*> argv;
  argv.reserve(argv_strings.size() + 1);
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) ExecChild(options, parent, log_fd, program.c_str(), argv.data());
  ::close(log_fd);
  if (pid < 0) {
    return Status(ErrorCode::INTERNAL_ERROR, fmt::format("{}: fork failed", child->name_));
  }
  child->pid_ = pid;
  return child;
}

ChildProcess::~ChildProcess() {
  Stop(options_.stop_grace);
  ::unlink(log_path_.c_str());
}

void ChildProcess::Reaped(int wait_status, double cpu_seconds) {
  exit_status_ = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
  final_cpu_ = cpu_seconds;
}

void ChildProcess::Signal(int sig) {
  if (pid_ > 0 && exit_status_ == -1) ::kill(pid_, sig);
}

void ChildProcess::Pause() {
  Signal(SIGSTOP);
  WaitUntil([this] { return ProcState(pid_) == 'T'; }, std::chrono::seconds(5));
}

void ChildProcess::Resume() {
  Signal(SIGCONT);
  WaitUntil([this] { return ProcState(pid_) != 'T'; }, std::chrono::seconds(5));
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
  return WaitUntil([this] { return !Running(); }, timeout);
}

void ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (!Running()) return;
  if (grace.count() > 0) {
    ::kill(pid_, SIGTERM);
    if (WaitExit(grace)) return;
  }
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

uint64_t ChildProcess::ResidentBytes() const {
  if (exit_status_ != -1 || pid_ <= 0) return 0;
  std::ifstream in(fmt::format("/proc/{}/statm", pid_));
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::string ChildProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ChildProcess::LogTail(size_t bytes) const {
  std::string text = Log();
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

bool ChildProcess::WaitForLog(const std::string& text, std::chrono::milliseconds timeout) {
  return WaitUntil([&] { return Log().find(text) != std::string::npos; }, timeout);
}

uint16_t FreeLoopbackPort() {
  // Ports handed out lately in this process: a caller asks for several before any is bound (a
  // master's RPC and metrics ports), and a free port picked twice made a master refuse
  // --metrics_port == --rpc_port. The one piece of process-wide state here; it only ever
  // narrows the choice.
  static std::mutex mu;
  static std::array<uint16_t, 512> recent{};
  static size_t next = 0;
  auto fresh = [&](uint16_t p) {
    std::lock_guard lock(mu);
    if (p == 0 || std::find(recent.begin(), recent.end(), p) != recent.end()) return false;
    recent[next++ % recent.size()] = p;
    return true;
  };
  const int low = EphemeralLow();
  constexpr int kFirst = 10000;
  if (low > kFirst + 1000) {
    std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int> pick(kFirst, low - 1);
    for (int i = 0; i < 200; ++i) {
      const uint16_t p = TryBind(static_cast<uint16_t>(pick(rng)));
      if (fresh(p)) return p;
    }
  }
  for (int i = 0; i < 100; ++i) {
    const uint16_t p = TryBind(0);
    if (fresh(p)) return p;
  }
  return 0;
}

bool LoopbackAccepts(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a = Loopback(port);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::close(fd);
  return rc == 0;
}

bool WaitForLoopbackPort(uint16_t port, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (!LoopbackAccepts(port)) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace kvpool
