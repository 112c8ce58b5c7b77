#include "tools/bench/hicache_workload.h"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <latch>
#include <thread>

#include "common/units.h"
#include "tools/bench/hicache_engine.h"
#include "tools/bench/hicache_process.h"
#include "tools/bench/stats.h"

namespace kvpool::tools::bench {
namespace {

double Pct(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

std::string ProgressLine(const HicacheCounters& c, double elapsed, double total) {
  const uint64_t asked = c.pages_asked.load(), l2 = c.l2_hits.load(), l3 = c.l3_hits.load();
  return fmt::format(
      "  {:5.1f}/{:.0f} s  turns {:6}  L3 hit {:5.1f}%  read {:7.2f} GB  "
      "written {:7.2f} GB",
      elapsed, total, c.turns.load(), Pct(l3, asked - l2), c.bytes_read.load() / 1e9,
      c.bytes_written.load() / 1e9);
}

// Runs every engine's turns until the deadline, a stop request or an error; the main thread
// shows progress meanwhile. Returns the first engine error.
Status DriveEngines(const HicacheContext& ctx, std::vector<std::unique_ptr<Engine>>& engines,
                    const HicacheCounters& counters, double& cpu_s, double& wall_s) {
  const BenchOptions& o = *ctx.options;
  const double seconds = o.HicacheSeconds();
  const bool tty = o.progress && ::isatty(STDOUT_FILENO);
  std::vector<Status> errors(engines.size());
  std::latch go(1);
  std::atomic<size_t> running{engines.size()};
  auto deadline = BenchClock::now();  // set before go
  std::vector<std::thread> threads;
  for (size_t i = 0; i < engines.size(); ++i) {
    threads.emplace_back([&, i] {
      go.wait();
      while (errors[i].ok() && !ctx.stop.stop_requested() && BenchClock::now() < deadline) {
        errors[i] = engines[i]->RunTurn();
      }
      running.fetch_sub(1);
    });
  }
  const double cpu0 = ProcessCpuSeconds() + (ctx.pool_cpu ? ctx.pool_cpu() : 0);
  const auto t0 = BenchClock::now();
  deadline =
      t0 + std::chrono::duration_cast<BenchClock::duration>(std::chrono::duration<double>(seconds));
  go.count_down();
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(tty ? 200 : 50));
    if (tty) std::cout << "\r" << ProgressLine(counters, SecondsSince(t0), seconds) << std::flush;
  }
  for (auto& t : threads) t.join();
  wall_s = SecondsSince(t0);
  cpu_s = ProcessCpuSeconds() + (ctx.pool_cpu ? ctx.pool_cpu() : 0) - cpu0;
  if (tty) std::cout << "\r" << ProgressLine(counters, wall_s, seconds) << "\n";
  for (auto& e : errors) {
    if (!e.ok()) return e;
  }
  return Status::Ok();
}

// Merges one call type of every engine into a row.
Row MergeRow(const char* name, const HicacheContext& ctx, std::vector<EngineTallies*>& engines,
             ThreadTally EngineTallies::*which) {
  Row row;
  row.workload = name;
  row.mode = ModeName(ctx.mode);
  row.page_bytes = ctx.options->hicache.page_bytes;
  row.threads = ctx.options->hicache.engines;
  std::vector<int64_t> all;
  for (auto& e : engines) {
    ThreadTally& t = e->*which;
    all.insert(all.end(), t.latency_ns.begin(), t.latency_ns.end());
    row.calls += t.calls;
    row.keys += t.keys;
    row.bytes += t.bytes;
    row.busy_s = std::max(row.busy_s, t.busy_s);
    row.verified += t.verified;
  }
  row.batch = row.calls ? static_cast<int>((row.keys + row.calls / 2) / row.calls) : 0;
  Percentiles p = ComputePercentiles(all);
  row.p50_us = p.p50_us;
  row.p99_us = p.p99_us;
  row.p999_us = p.p999_us;
  return row;
}

void PrintSummary(const HicacheContext& ctx, const HicacheCounters& c, const std::vector<Row>& rows,
                  double wall_s) {
  const HicacheOptions& h = ctx.options->hicache;
  const uint64_t asked = c.pages_asked.load(), l2 = c.l2_hits.load(), l3 = c.l3_hits.load();
  const uint64_t turns = c.turns.load();
  const Row &turn = rows[0], &ex = rows[1], &get = rows[2], &put = rows[3];
  std::cout << fmt::format(
      "hicache summary ({} mode, {:.1f} s): {} engines, {} conversations, {} system prompts x {} "
      "pages, {} pages\n",
      ModeName(ctx.mode), wall_s, h.engines, h.conversations, h.system_prompts,
      h.system_prompt_pages, FormatSize(h.page_bytes));
  std::cout << fmt::format("  turns          {} ({:.1f}/s), {:.1f} new pages per turn\n", turns,
                           turns / wall_s, turns ? double(c.new_pages.load()) / turns : 0.0);
  std::cout << fmt::format(
      "  prefix pages   {}: {:.1f}% in the engine's own memory (L2), {:.1f}% read from kvpool "
      "(L3), {:.1f}% recomputed\n",
      asked, Pct(l2, asked), Pct(l3, asked), Pct(asked - l2 - l3, asked));
  std::cout << fmt::format(
      "  L3 hit rate    {:.1f}% of the prefix pages the engine did not hold ({} lost to "
      "eviction between exists and get)\n",
      Pct(l3, asked - l2), c.lost_races.load());
  std::cout << fmt::format(
      "  bytes moved    read {:.2f} GB ({:.2f} GB/s), written {:.2f} GB "
      "({:.2f} GB/s), {:.2f} CPU-s per GB\n",
      get.bytes / 1e9, get.bytes / 1e9 / wall_s, put.bytes / 1e9, put.bytes / 1e9 / wall_s,
      turn.cpu_s_per_gb);
  std::cout << fmt::format(
      "  latency (us)   exists p50 {:.0f} p99 {:.0f} | get batch p50 {:.0f} p99 {:.0f} | put "
      "batch p50 {:.0f} p99 {:.0f} | turn p50 {:.0f} p99 {:.0f}\n",
      ex.p50_us, ex.p99_us, get.p50_us, get.p99_us, put.p50_us, put.p99_us, turn.p50_us,
      turn.p99_us);
  std::cout << fmt::format("  checked        {} pages read back byte-exact, none wrong\n",
                           get.verified);
  if (c.dropped.load() > 0) {
    std::cout << fmt::format(
        "  dropped        {} page writes refused by a full pool (every "
        "object leased or pinned)\n",
        c.dropped.load());
  }
}

}  // namespace

Result<std::vector<Row>> RunHicache(const HicacheContext& ctx) {
  const BenchOptions& o = *ctx.options;
  const uint64_t seed = Mix64(std::hash<std::string>()(ctx.key_prefix));
  PagePattern pattern(o.hicache.page_bytes, seed);
  ConversationTable table(o.hicache, seed);
  HicacheCounters counters;
  std::vector<std::unique_ptr<Engine>> engines;  // threads
  std::vector<EngineTallies> process_tallies;    // processes
  std::vector<EngineTallies*> tallies;
  double cpu_s = 0, wall_s = 0;
  std::cout << fmt::format("[{}] hicache: {} engine {} serving {} conversations for {:g} s\n",
                           ModeName(ctx.mode), o.hicache.engines,
                           o.hicache.processes ? "processes" : "threads", o.hicache.conversations,
                           o.HicacheSeconds());
  if (o.hicache.processes) {
    KVPOOL_RETURN_IF_ERROR(RunEngineProcesses(ctx, process_tallies, counters, cpu_s, wall_s));
    for (auto& t : process_tallies) tallies.push_back(&t);
  } else {
    for (int i = 0; i < o.hicache.engines; ++i) {
      engines.push_back(std::make_unique<Engine>(i, ctx, table, pattern, counters));
      KVPOOL_RETURN_IF_ERROR(engines.back()->Setup());
    }
    Status st = DriveEngines(ctx, engines, counters, cpu_s, wall_s);
    for (auto& e : engines) e->Cleanup();
    KVPOOL_RETURN_IF_ERROR(st);
    for (auto& e : engines) tallies.push_back(&e->tallies());
  }

  double side = 0;
  for (auto* t : tallies) side += t->get.side_cpu_s + t->put.side_cpu_s;
  std::vector<Row> rows = {MergeRow("hicache", ctx, tallies, &EngineTallies::turn),
                           MergeRow("hicache-exists", ctx, tallies, &EngineTallies::exists),
                           MergeRow("hicache-get", ctx, tallies, &EngineTallies::get),
                           MergeRow("hicache-put", ctx, tallies, &EngineTallies::put)};
  rows[1].page_bytes = 0;  // exists moves no pages
  Row& turn = rows[0];
  turn.bytes = rows[2].bytes + rows[3].bytes;
  turn.busy_s = wall_s;
  turn.cpu_s = std::max(0.0, cpu_s - side);
  const std::string limit_name = LimitName(ctx.mode);
  const LimitFigure* limit = ctx.limits->For(ctx.mode, o.hicache.page_bytes);
  FinishRow(turn, limit, limit_name);
  FinishRow(rows[1], nullptr, "");
  FinishRow(rows[2], limit, limit_name);
  FinishRow(rows[3], limit, limit_name);
  rows[2].cpu_s_per_gb = rows[3].cpu_s_per_gb = 0;  // CPU is only known for whole turns
  PrintSummary(ctx, counters, rows, wall_s);
  std::cout << "\n" << TableHeader() << "\n";
  for (const Row& r : rows) std::cout << TableLine(r) << "\n";
  return rows;
}

}  // namespace kvpool::tools::bench
