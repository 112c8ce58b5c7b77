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

}  // namespace kvpool
