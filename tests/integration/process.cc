#include "process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

extern char** environ;

namespace kvpool::testing {

namespace {

// Binds 127.0.0.1:`port` (0: any) and returns the bound port, or 0 when it is taken.
uint16_t TryBind(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  uint16_t bound = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    bound = ntohs(a.sin_port);
  }
  ::close(fd);
  return bound;
}

// The low end of the kernel's ephemeral range (source ports of connections, bind to port 0).
int EphemeralLow() {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  return (f >> low) ? low : 0;
}

}  // namespace

uint16_t FreePort() {
  // Below the ephemeral range: the kernel hands those ports to outgoing connections and to
  // servers binding port 0 (the node's HTTP port), which could take a port between this call
  // and the test's process binding it. Tests run in parallel: pick at random.
  static const int low = EphemeralLow();
  constexpr int kFirst = 10000;
  if (low > kFirst + 1000) {
    static thread_local std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int> pick(kFirst, low - 1);
    for (int i = 0; i < 100; ++i) {
      if (uint16_t p = TryBind(static_cast<uint16_t>(pick(rng))); p != 0) return p;
    }
  }
  return TryBind(0);
}

bool WaitForPort(uint16_t port, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::close(fd);
    if (rc == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

Process::Process(const std::string& binary, std::vector<std::string> args, std::string name)
    : name_(std::move(name)) {
  char tmpl[] = "/tmp/kvpool-test-XXXXXX";
  int fd = ::mkstemp(tmpl);
  log_path_ = tmpl;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd, 1);
  posix_spawn_file_actions_adddup2(&fa, fd, 2);
  // The child must not inherit a blocked signal mask from a test that blocked signals.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv;
  args.insert(args.begin(), binary);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawn(&pid_, binary.c_str(), &fa, &attr, argv.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(fd);
}

Process::~Process() {
  if (running()) {
    Signal(SIGKILL);
    Wait(std::chrono::seconds(10));
  }
  ::unlink(log_path_.c_str());
}

void Process::Signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

namespace {

// The state letter of /proc/PID/stat ('R', 'S', 'T', ...), or 0 when unreadable.
char ProcState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
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

}  // namespace

void Process::Pause() {
  Signal(SIGSTOP);
  WaitUntil([this] { return ProcState(pid_) == 'T'; }, std::chrono::seconds(5));
}

void Process::Resume() {
  Signal(SIGCONT);
  WaitUntil([this] { return ProcState(pid_) != 'T'; }, std::chrono::seconds(5));
}

bool Process::WaitForLog(const std::string& text, std::chrono::milliseconds timeout) {
  return WaitUntil([&] { return Log().find(text) != std::string::npos; }, timeout);
}

bool Process::running() {
  if (pid_ <= 0 || status_ != -1) return false;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return false;
  }
  return true;
}

int Process::Wait(std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= end) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

std::string Process::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunResult RunCommand(const std::string& binary, const std::vector<std::string>& args,
                     std::chrono::milliseconds timeout) {
  Process p(binary, args, "command");
  int code = p.Wait(timeout);
  if (code == -1) {
    p.Signal(SIGKILL);
    p.Wait(std::chrono::seconds(5));
  }
  return {code, p.Log()};
}

}  // namespace kvpool::testing
