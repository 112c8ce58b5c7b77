#include "common/signals.h"

#include <pthread.h>

#include <csignal>

namespace kvpool {
namespace {

sigset_t TerminationSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

void BlockTerminationSignals() {
  sigset_t set = TerminationSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

int WaitForTerminationSignal() {
  sigset_t set = TerminationSet();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) == 0 && sig != SIGHUP) return sig;
  }
}

int WaitForTerminationSignalFor(std::chrono::milliseconds timeout) {
  sigset_t set = TerminationSet();
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = end - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return 0;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    const int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig > 0 && sig != SIGHUP) return sig;  // else a timeout, EINTR or SIGHUP: look again
  }
}

}  // namespace kvpool
