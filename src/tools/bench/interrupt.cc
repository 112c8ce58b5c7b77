#include "tools/bench/interrupt.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace kvpool::tools::bench {

InterruptWatcher::InterruptWatcher() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  signal_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  thread_ = std::thread([this] { Watch(); });
}

InterruptWatcher::~InterruptWatcher() {
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof(one));
  thread_.join();
  if (signal_fd_ >= 0) ::close(signal_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void InterruptWatcher::Watch() {
  if (signal_fd_ < 0 || wake_fd_ < 0) return;
  for (;;) {
    pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    signalfd_siginfo info{};
    if (::read(signal_fd_, &info, sizeof(info)) != sizeof(info)) continue;
    if (signal_.exchange(static_cast<int>(info.ssi_signo)) != 0) {
      std::fputs("\nkvpool bench: interrupted again, exiting now\n", stderr);
      std::_Exit(130);
    }
    std::fputs("\nkvpool bench: interrupted, stopping (Ctrl-C again to exit at once)\n", stderr);
    source_.request_stop();
  }
}

}  // namespace kvpool::tools::bench
