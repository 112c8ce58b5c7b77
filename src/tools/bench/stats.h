// Measuring helpers shared by the bench's workloads: clocks, CPU time and latency percentiles.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace kvpool::tools::bench {

using BenchClock = std::chrono::steady_clock;

inline double SecondsSince(BenchClock::time_point t) {
  return std::chrono::duration<double>(BenchClock::now() - t).count();
}

inline int64_t NanosSince(BenchClock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(BenchClock::now() - t0).count();
}

// CPU seconds used by the calling thread (CLOCK_THREAD_CPUTIME_ID).
double ThreadCpuSeconds();
// CPU seconds (user + system) used by this process, plus its children already reaped
// (getrusage RUSAGE_SELF + RUSAGE_CHILDREN). Live children are counted by their owners.
double ProcessCpuSeconds();

struct Percentiles {
  double p50_us = 0;
  double p99_us = 0;
  double p999_us = 0;
};
// Nearest-rank percentiles of `samples_ns` (sorted in place). All zero when empty.
Percentiles ComputePercentiles(std::vector<int64_t>& samples_ns);

}  // namespace kvpool::tools::bench
