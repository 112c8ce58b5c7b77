// Runs one measured row on T threads: every thread prepares (untimed), all start the measured
// loop together, and clean up (untimed) after everyone stopped. CPU is sampled around the
// measured loop only, minus what the threads report spending on making and checking payloads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "kvpool/client.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/report.h"

namespace kvpool::tools::bench {

// What every row of one mode shares. Not owned: the client and options outlive the rows.
struct RowContext {
  Client* client = nullptr;  // thread-safe; shared by all threads of a row
  Mode mode = Mode::kRemote;
  bool host_memory = false;  // standalone: buffers must come from HostMemAllocator
  const BenchOptions* options = nullptr;
  std::string key_prefix;            // unique per run and mode
  ReplicateConfig replicate;         // embedded: the client's own segment first
  uint64_t capacity_bytes = 0;       // pool space rows may fill (from Stat)
  std::function<double()> pool_cpu;  // CPU seconds of the pool's processes so far (0: unknown)
  std::stop_token stop;
};

// What one thread measured.
struct ThreadTally {
  std::vector<int64_t> latency_ns;  // one per batch call
  uint64_t calls = 0;
  uint64_t keys = 0;
  uint64_t bytes = 0;
  double busy_s = 0;      // inside kvpool calls
  double side_cpu_s = 0;  // CPU spent making / checking payloads during the measured loop
  uint64_t verified = 0;  // keys checked byte-exact

  // Records one batch call that took `ns` and moved `n_keys` keys and `n_bytes` bytes.
  void Call(int64_t ns, uint64_t n_keys, uint64_t n_bytes) {
    latency_ns.push_back(ns);
    ++calls;
    keys += n_keys;
    bytes += n_bytes;
    busy_s += static_cast<double>(ns) / 1e9;
  }
};

// One thread's share of a row. Each method runs on that thread; a non-OK status stops the row
// and is reported (the bench fails loudly: wrong bytes or failed calls are errors).
class RowWorker {
 public:
  virtual ~RowWorker() = default;
  virtual Status Prepare() = 0;                   // allocate, register, populate; untimed
  virtual Status Step(ThreadTally& tally) = 0;    // one measured batch call (+ sampled checks)
  virtual Status Finish(ThreadTally& tally) = 0;  // verify the end state, remove keys; untimed
};

using WorkerFactory = std::function<std::unique_ptr<RowWorker>(int thread_index)>;

// Runs `threads` workers until the row's bound (--iterations per thread, else --duration_s) or
// a stop request, and fills `row`'s measured fields (calls, keys, bytes, busy_s, percentiles,
// cpu_s, verified). Returns the first worker error; every thread is joined before returning.
Status RunWorkers(const RowContext& ctx, int threads, const WorkerFactory& make, Row& row);

}  // namespace kvpool::tools::bench
