// `--workload hicache`: what SGLang's HiCache does to an L3 store, simulated.
//
// Conversations share a few system prompts and grow turn by turn; every page of a conversation
// is a key in a hash chain (page i's key hashes page i-1's key and page i's tokens), so equal
// prefixes give equal keys across conversations and engines. Each of --engines simulated
// engines (a thread with its own Client and registered host pages) serves one turn at a time of
// a randomly chosen conversation (as a load balancer would):
//   1. pages already in the engine's own host memory (an LRU of --l2_pages) are not asked for;
//   2. ExistsPrefix over the rest of the conversation's chain (one call);
//   3. BatchGetInto of the hit pages, in batches of at most 128, into the engine's pages;
//   4. BatchPutFrom (write-through) of the pages it had to compute: the misses and the turn's
//      new pages.
// Gets are checked byte-exact every --verify_every'th call; a get that lost a race with
// eviction (OBJECT_NOT_FOUND after the exists) counts as a miss, any other failure ends the run.
#pragma once

#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "kvpool/status.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/limits.h"
#include "tools/bench/report.h"

namespace kvpool::tools::bench {

struct HicacheContext {
  std::string master_address;
  std::vector<std::string> local_nodes;  // standalone: engine i attaches to [i % size]
  Mode mode = Mode::kRemote;  // embedded: each engine contributes --segment_size / --engines
  const BenchOptions* options = nullptr;
  const Limits* limits = nullptr;
  std::function<double()> pool_cpu;  // CPU seconds of the pool's processes; empty when unknown
  std::stop_token stop;
  std::string key_prefix;  // unique per run
};

// Runs the simulation for the hicache duration (20 s unless --duration_s), with a one-line
// progress display when stdout is a terminal, prints a summary, and returns the rows
// "hicache" (whole turns), "hicache-exists", "hicache-get" and "hicache-put".
// REQUIRES: called from the bench's main thread; every engine thread is joined before return.
// Errors: client set-up, a failed call, or WRONG BYTES.
Result<std::vector<Row>> RunHicache(const HicacheContext& ctx);

}  // namespace kvpool::tools::bench
