// Clean shutdown on SIGINT / SIGTERM for the long-running roles (master, node).
#pragma once

#include <chrono>
#include <functional>

namespace kvpool {

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and every thread it starts later,
// and ignores SIGPIPE (send errors come back as EPIPE instead). Call first thing in main().
void BlockTerminationSignals();

// Waits until SIGINT or SIGTERM arrives (REQUIRES: BlockTerminationSignals() was called before
// any thread started). Returns the signal number.
int WaitForTerminationSignal();

// As WaitForTerminationSignal, for at most `timeout`: 0 when none arrived by then.
int WaitForTerminationSignalFor(std::chrono::milliseconds timeout);

}  // namespace kvpool
