// `kvpool bench`: kvpool's own benchmark (put / get / exists / prefix rows, and a HiCache-shaped
// workload), each figure printed next to the machine's limit measured in the same run. Also the
// hidden `kvpool bench-tcp-peer` command the TCP limit re-executes this binary as, and the hidden
// `kvpool bench-hicache-engine` the hicache workload's --engine_processes run as.
//
// Exit codes: 0 success; 1 a failure (pool did not start, a call failed, WRONG BYTES); 2 bad
// flags; 130 interrupted (what was measured so far is still printed and written).
#pragma once

#include <CLI/CLI.hpp>

#include "tools/bench/bench_options.h"
#include "tools/bench/hicache_process.h"

namespace kvpool::tools::bench {

struct BenchCommandOptions {
  BenchOptions bench;
  TcpPeerOptions tcp_peer;
  EngineProcessOptions engine;
};

// Registers `bench` and the hidden `bench-tcp-peer` on `app`; `exit_code` receives the result
// of whichever ran. `o` must outlive app.parse(). The commands run inside parse, on the calling
// (main) thread, which must have blocked the termination signals (BlockTerminationSignals).
void AddBenchCommands(CLI::App& app, BenchCommandOptions& o, int& exit_code);

// The whole bench run with validated-or-not options (validates them first).
int RunBench(BenchOptions& o);

}  // namespace kvpool::tools::bench
