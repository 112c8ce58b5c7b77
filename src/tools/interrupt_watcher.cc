#include "tools/interrupt_watcher.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>

namespace kvpool::tools {
namespace {

const char* SignalName(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

}  // namespace

InterruptWatcher::InterruptWatcher(std::string command) : command_(std::move(command)) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  // Blocked again here in case a caller did not (a signalfd sees only blocked signals).
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC);
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (signal_fd_ >= 0 && stop_fd_ >= 0) thread_ = std::thread([this] { Run(); });
}

InterruptWatcher::~InterruptWatcher() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (signal_fd_ >= 0) ::close(signal_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void InterruptWatcher::SetPartialOutput(std::string path) {
  std::lock_guard<std::mutex> lock(mu_);
  partial_output_ = std::move(path);
}

void InterruptWatcher::Run() {
  pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    signalfd_siginfo info{};
    if (fds[0].revents == 0 || ::read(signal_fd_, &info, sizeof(info)) != sizeof(info)) continue;
    int sig = static_cast<int>(info.ssi_signo);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!partial_output_.empty()) ::unlink(partial_output_.c_str());
    }
    std::string msg = "kvpool " + command_ + ": interrupted by " + SignalName(sig) + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    // Not exit(): the main thread is inside the client library; static destructors must not run
    // under it. The kernel closes the connections.
    ::_exit(128 + sig);
  }
}

}  // namespace kvpool::tools
