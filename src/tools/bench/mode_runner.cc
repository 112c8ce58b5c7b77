#include "tools/bench/mode_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <thread>

#include "client/client_security.h"
#include "common/random_id.h"
#include "common/units.h"
#include "kvpool/client.h"
#include "tools/bench/hicache_workload.h"
#include "tools/bench/pool_launcher.h"
#include "tools/bench/stats.h"
#include "tools/bench/workers.h"
#include "tools/bench/workloads.h"

namespace kvpool::tools::bench {
namespace {

Result<std::unique_ptr<LocalPool>> StartPool(const BenchOptions& o, Mode mode,
                                             std::stop_token stop) {
  PoolSpec spec;
  spec.nodes = mode == Mode::kEmbedded ? 0 : o.node_count;
  spec.segment_bytes = o.segment_bytes;
  spec.security = o.security;
  for (size_t at = 0; at < o.node_flags.size();) {
    const size_t end = std::min(o.node_flags.find(' ', at), o.node_flags.size());
    if (end > at) spec.node_flags.push_back(o.node_flags.substr(at, end - at));
    at = end + 1;
  }
  const auto t0 = BenchClock::now();
  auto pool = LocalPool::Start(spec, stop);
  if (!pool.ok()) return pool.status();
  std::cout << fmt::format("[{}] private pool on 127.0.0.1: master {}", ModeName(mode),
                           (*pool)->master_address());
  if (spec.nodes > 0)
    std::cout << fmt::format(" + {} node(s) x {}", spec.nodes, FormatSize(spec.segment_bytes));
  std::cout << fmt::format(", ready in {:.2f} s\n", SecondsSince(t0));
  return pool;
}

// Pool space the rows of this mode may fill: the own segment (embedded) or the whole pool.
Result<uint64_t> Capacity(Client& client, Mode mode, uint64_t own_segment) {
  if (mode == Mode::kEmbedded) return own_segment;
  auto s = client.Stat();
  if (!s.ok()) return s.status();
  if (s->capacity == 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("{} mode: the pool has no storage segments; start a `kvpool node` "
                              "or use --mode embedded",
                              ModeName(mode)));
  }
  return s->capacity;
}

// The client the mode's rows use: embedded contributes --segment_size (when rows run),
// standalone attaches to the first local node, remote contributes nothing.
Result<std::unique_ptr<Client>> ModeClient(const BenchOptions& o, Mode mode,
                                           const std::string& master,
                                           const std::vector<std::string>& local_nodes,
                                           bool rows_wanted) {
  if (mode == Mode::kStandalone) {
    StandaloneOptions so;
    so.server_address = local_nodes.front();
    return Client::SetupStandalone(so);
  }
  ClientOptions co;
  co.master_server_address = master;
  co.global_segment_size = mode == Mode::kEmbedded && rows_wanted ? o.segment_bytes : 0;
  co.prefault_segment = true;  // as the private pool's nodes (--prefault): no first-touch faults
  client::ApplySecurityFlags(o.security, co);
  return Client::Setup(co);
}

// Touches the private pool's fresh segment memory once (not measured; see WarmUp).
Status WarmUpPool(const RowContext& ctx) {
  const auto t0 = BenchClock::now();
  auto bytes = WarmUp(ctx.client, ctx.host_memory, ctx.replicate, ctx.key_prefix + "/warmup/",
                      static_cast<uint64_t>(0.8 * ctx.capacity_bytes), /*max_seconds=*/4, ctx.stop);
  if (!bytes.ok()) return bytes.status();
  std::cout << fmt::format(
      "[{}] warm-up: wrote {} once into the fresh segments in {:.2f} s "
      "(not measured)\n",
      ModeName(ctx.mode), FormatSize(*bytes), SecondsSince(t0));
  return Status::Ok();
}

// The put-first-fill row (workloads.h), printed on its own: the first page size, the largest
// batch, into the segments as the pool started them.
Status FirstFill(const RowContext& ctx, const Limits& limits, std::vector<Row>& rows) {
  const BenchOptions& o = *ctx.options;
  const int batch = *std::max_element(o.batch_list.begin(), o.batch_list.end());
  auto row = RunFirstFillRow(ctx, limits, o.page_list.front(), batch);
  if (!row.ok()) {
    return Status(row.code(),
                  fmt::format("put-first-fill {}: {}", ModeName(ctx.mode), row.status().message()));
  }
  std::cout << fmt::format(
      "[{}] first fill: puts into the segments as the pool started them "
      "(before the warm-up):\n{}\n{}\n",
      ModeName(ctx.mode), TableHeader(), TableLine(*row));
  rows.push_back(std::move(row).value());
  return Status::Ok();
}

// The CPU the private pool uses while nobody calls it (the bench's client stays connected and
// heartbeats): one second, right after the warm-up. Returned as an "idle" row.
Row MeasureIdle(const LocalPool& pool, Mode mode, std::stop_token stop) {
  Row row;
  row.workload = "idle";
  row.mode = ModeName(mode);
  const double cpu0 = pool.CpuSeconds();
  const auto t0 = BenchClock::now();
  while (SecondsSince(t0) < 1.0 && !stop.stop_requested()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  row.busy_s = SecondsSince(t0);
  row.cpu_s = row.pool_cpu_s = pool.CpuSeconds() - cpu0;
  std::cout << fmt::format("[{}] idle pool: {:.1f} ms CPU in {:.1f} s (master{})\n", row.mode,
                           row.cpu_s * 1e3, row.busy_s, mode == Mode::kEmbedded ? "" : " + nodes");
  return row;
}

bool RowWorkload(Workload w) { return w != Workload::kHicache && w != Workload::kMasterMemory; }

Status RunRows(const RowContext& ctx, const Limits& limits, std::vector<Row>& rows) {
  const BenchOptions& o = *ctx.options;
  for (Workload w : o.workload_list) {
    if (!RowWorkload(w)) continue;
    const bool data = w == Workload::kPut || w == Workload::kGet;
    const std::vector<uint64_t> pages = data ? o.page_list : std::vector<uint64_t>{0};
    for (uint64_t page : pages) {
      for (int batch : o.batch_list) {
        if (ctx.stop.stop_requested()) return Status::Ok();
        auto row = RunRow(ctx, limits, w, page, batch);
        if (!row.ok()) {
          return Status(row.code(),
                        fmt::format("{} {} page={} batch={}: {}", WorkloadName(w),
                                    ModeName(ctx.mode), page, batch, row.status().message()));
        }
        std::cout << TableLine(*row) << std::endl;
        rows.push_back(std::move(row).value());
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status RunMode(const BenchOptions& o, Mode mode, const Limits& limits, std::stop_token stop,
               std::vector<Row>& rows) {
  std::unique_ptr<LocalPool> pool;
  std::string master = o.master;
  std::vector<std::string> local_nodes;  // what standalone clients attach to
  if (!o.local_node.empty()) local_nodes.push_back(o.local_node);
  if (master.empty()) {
    auto p = StartPool(o, mode, stop);
    if (!p.ok()) return p.status();
    pool = std::move(p).value();
    master = pool->master_address();
    local_nodes = pool->node_addresses();
  }
  if (mode == Mode::kStandalone && local_nodes.empty()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "--mode standalone with --master needs --local_node HOST:PORT (a `kvpool node` "
                  "on this machine)");
  }
  std::function<double()> pool_cpu;
  if (pool) pool_cpu = [p = pool.get()] { return p->CpuSeconds(); };
  const std::string prefix =
      fmt::format("kvpool-bench/{}/{}", RandomId().substr(0, 12), ModeName(mode));
  const bool rows_wanted = std::any_of(o.workload_list.begin(), o.workload_list.end(), RowWorkload);
  auto client = ModeClient(o, mode, master, local_nodes, rows_wanted);
  if (!client.ok()) return client.status();
  RowContext ctx;
  ctx.client = client->get();
  ctx.mode = mode;
  ctx.host_memory = mode == Mode::kStandalone;
  ctx.options = &o;
  ctx.key_prefix = prefix;
  if (!(*client)->SegmentName().empty()) {
    ctx.replicate.preferred_segments = {(*client)->SegmentName()};
  }
  ctx.pool_cpu = pool_cpu;
  ctx.stop = stop;
  if (rows_wanted || mode != Mode::kEmbedded) {  // embedded hicache: the engines' segments
    auto capacity = Capacity(**client, mode, o.segment_bytes);
    if (!capacity.ok()) return capacity.status();
    ctx.capacity_bytes = *capacity;
  }
  if (pool && ctx.capacity_bytes > 0) {
    if (o.first_fill && o.Has(Workload::kPut)) KVPOOL_RETURN_IF_ERROR(FirstFill(ctx, limits, rows));
    KVPOOL_RETURN_IF_ERROR(pool->WaitResident(o.segment_bytes, stop));
    KVPOOL_RETURN_IF_ERROR(WarmUpPool(ctx));
  }
  if (pool) rows.push_back(MeasureIdle(*pool, mode, stop));
  if (rows_wanted) {
    std::cout << TableHeader() << std::endl;
    Status st = RunRows(ctx, limits, rows);
    (void)(*client)->Close();
    KVPOOL_RETURN_IF_ERROR(st);
    if (pool) KVPOOL_RETURN_IF_ERROR(pool->CheckAlive());
  } else {
    (void)(*client)->Close();
  }
  if (o.Has(Workload::kHicache) && !stop.stop_requested()) {
    HicacheContext hc{master, local_nodes, mode, &o, &limits, pool_cpu, stop, prefix + "/hicache"};
    auto hrows = RunHicache(hc);
    if (!hrows.ok()) return hrows.status();
    rows.insert(rows.end(), hrows->begin(), hrows->end());
  }
  return Status::Ok();
}

}  // namespace kvpool::tools::bench
