#include "tools/bench/stats.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cmath>

namespace kvpool::tools::bench {
namespace {

double Seconds(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

double Nearest(const std::vector<int64_t>& sorted, double q) {
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  size_t idx = rank == 0 ? 0 : std::min(rank - 1, sorted.size() - 1);
  return static_cast<double>(sorted[idx]) / 1000.0;
}

}  // namespace

double ThreadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

double ProcessCpuSeconds() {
  rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  return Seconds(self.ru_utime) + Seconds(self.ru_stime) + Seconds(children.ru_utime) +
         Seconds(children.ru_stime);
}

Percentiles ComputePercentiles(std::vector<int64_t>& samples_ns) {
  if (samples_ns.empty()) return {};
  std::sort(samples_ns.begin(), samples_ns.end());
  return {Nearest(samples_ns, 0.50), Nearest(samples_ns, 0.99), Nearest(samples_ns, 0.999)};
}

}  // namespace kvpool::tools::bench
