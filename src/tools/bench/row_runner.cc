#include "tools/bench/row_runner.h"

#include <algorithm>
#include <latch>
#include <thread>

#include "tools/bench/stats.h"

namespace kvpool::tools::bench {
namespace {

// The phases every thread goes through, in lock step with the main thread.
struct Phases {
  explicit Phases(int threads) : prepared(threads), measured(threads) {}
  std::latch prepared;   // threads -> main: prepared (or failed to)
  std::latch go{1};      // main -> threads: CPU sampled, start measuring
  std::latch measured;   // threads -> main: stopped measuring
  std::latch finish{1};  // main -> threads: CPU sampled, clean up
  bool skip = false;     // set by main before `go` when a thread failed to prepare
};

void RunThread(const RowContext& ctx, RowWorker& w, Phases& ph, ThreadTally& tally, Status& error) {
  error = w.Prepare();
  ph.prepared.count_down();
  ph.go.wait();
  const BenchOptions& o = *ctx.options;
  const auto end = BenchClock::now() + std::chrono::duration_cast<BenchClock::duration>(
                                           std::chrono::duration<double>(o.RowSeconds()));
  while (error.ok() && !ph.skip && !ctx.stop.stop_requested()) {
    if (o.iterations > 0 ? tally.calls >= static_cast<uint64_t>(o.iterations)
                         : BenchClock::now() >= end) {
      break;
    }
    error = w.Step(tally);
  }
  ph.measured.count_down();
  ph.finish.wait();
  Status st = w.Finish(tally);
  if (error.ok()) error = st;
}

}  // namespace

Status RunWorkers(const RowContext& ctx, int threads, const WorkerFactory& make, Row& row) {
  std::vector<std::unique_ptr<RowWorker>> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) workers.push_back(make(t));
  std::vector<ThreadTally> tallies(threads);
  std::vector<Status> errors(threads);
  Phases ph(threads);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { RunThread(ctx, *workers[t], ph, tallies[t], errors[t]); });
  }
  ph.prepared.wait();
  for (auto& e : errors) ph.skip = ph.skip || !e.ok();  // written before count_down
  const double pool0 = ctx.pool_cpu ? ctx.pool_cpu() : 0;
  const double cpu0 = ProcessCpuSeconds() + (ctx.pool_cpu ? ctx.pool_cpu() : 0);
  ph.go.count_down();
  ph.measured.wait();
  row.pool_cpu_s = (ctx.pool_cpu ? ctx.pool_cpu() : 0) - pool0;
  const double cpu1 = ProcessCpuSeconds() + (ctx.pool_cpu ? ctx.pool_cpu() : 0);
  ph.finish.count_down();
  for (auto& th : pool) th.join();

  std::vector<int64_t> all;
  double side_cpu = 0;
  for (auto& t : tallies) {
    all.insert(all.end(), t.latency_ns.begin(), t.latency_ns.end());
    row.calls += t.calls;
    row.keys += t.keys;
    row.bytes += t.bytes;
    row.busy_s = std::max(row.busy_s, t.busy_s);
    row.verified += t.verified;
    side_cpu += t.side_cpu_s;
  }
  Percentiles p = ComputePercentiles(all);
  row.p50_us = p.p50_us;
  row.p99_us = p.p99_us;
  row.p999_us = p.p999_us;
  row.cpu_s = std::max(0.0, cpu1 - cpu0 - side_cpu);
  for (auto& e : errors) {
    if (!e.ok()) return e;
  }
  return Status::Ok();
}

}  // namespace kvpool::tools::bench
