// `kvpool top`: the master's segments, use, objects and request rates, refreshed in place like
// top(1). Reads the master's HTTP /metrics (see docs/operations.md), so it needs no RPC access.
//
//   kvpool top [--http host:port] [--interval_ms 1000] [--iterations N]
//
// Clears the screen between refreshes when stdout is a terminal; otherwise prints one screen
// after another separated by a blank line. Exit codes: 0 after N refreshes or on SIGINT/SIGTERM;
// 1 when the first fetch fails or what answers is not a kvpool master's /metrics (a node's, say;
// the reason on stderr); 2 bad flags.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace kvpool::tools {

struct TopCommandOptions {
  std::string http = "127.0.0.1:9003";  // --http: the master's --metrics_host:--metrics_port
  int interval_ms = 1000;               // --interval_ms: time between refreshes (100..3600000)
  int iterations = 0;                   // --iterations: refreshes before exiting (0: until ^C)
  int timeout_ms = 5000;                // --timeout_ms: deadline of each fetch
};

// Registers `top` on `app`; `exit_code` receives its result. `o` must outlive app.parse(). Runs
// on the calling (main) thread, which must have blocked the termination signals
// (BlockTerminationSignals): top waits for them between refreshes.
void AddTopCommand(CLI::App& app, TopCommandOptions& o, int& exit_code);

}  // namespace kvpool::tools
