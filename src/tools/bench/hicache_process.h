// `--engine_processes`: the hicache workload's engines as separate processes. The bench
// re-executes itself (`kvpool bench-hicache-engine`, hidden, as `bench-tcp-peer`) once per
// engine; each child runs one Engine (its own Client, host pages, L2 and conversations: the
// engines of a real deployment share the pool and the system prompts, not their memory) from a
// common start time to a common deadline, then writes what it measured to a JSON file that the
// bench merges. Children are stopped with the bench (ChildProcess).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "kvpool/status.h"
#include "tools/bench/hicache_engine.h"
#include "tools/bench/hicache_workload.h"

namespace kvpool::tools::bench {

// Flags of `bench-hicache-engine` (set by the parent, not by people).
struct EngineProcessOptions {
  BenchOptions bench;      // the hicache options, --mode, --segment_size, --verify_every
  std::string master;      // --master
  std::string nodes;       // --local_nodes: comma-separated standalone attach addresses
  int index = 0;           // --index: this engine's number
  std::string key_prefix;  // --key_prefix: the run's keys (and conversation seed)
  int64_t start_ns = 0;    // --start_ns: steady_clock time to start serving turns
  std::string result;      // --result: the JSON file to write
};

void AddEngineProcessFlags(CLI::App& cmd, EngineProcessOptions& o);
// The child: exit code 0 when every turn succeeded and the result was written.
int RunEngineProcess(EngineProcessOptions& o);

// The parent: runs ctx.options->hicache.engines engine processes for the hicache duration and
// fills one EngineTallies per engine, the summed counters, the CPU of the engines and the pool,
// and the wall time. Errors: a child that failed (with its log), or did not finish in time.
Status RunEngineProcesses(const HicacheContext& ctx, std::vector<EngineTallies>& tallies,
                          HicacheCounters& counters, double& cpu_s, double& wall_s);

}  // namespace kvpool::tools::bench
