#include "tools/bench/workloads.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"
#include "tools/bench/workers.h"

namespace kvpool::tools::bench {
namespace {

// Rows may fill this fraction of the pool: the master starts evicting at 90 %.
constexpr double kUsableFraction = 0.8;
constexpr uint64_t kMaxGetKeys = 16384;  // per thread

Status TooBig(uint64_t need, uint64_t capacity) {
  return Status(
      ErrorCode::INVALID_PARAMS,
      fmt::format("the row needs {} of pool space but the pool holds {} (usable {:.0f}%); "
                  "raise --segment_size or lower --batch / --page_size / --threads",
                  FormatSize(need), FormatSize(capacity), kUsableFraction * 100));
}

// Keys per thread of a get row: the working set split over the threads, at least one batch,
// a whole number of batches, and no more than the pool can hold.
Result<size_t> GetRowKeys(const RowContext& ctx, uint64_t page, int batch) {
  const BenchOptions& o = *ctx.options;
  const uint64_t per_thread = o.working_set_bytes / o.threads;
  // Small pages: at most kMaxGetKeys keys, so populating the row stays quick.
  size_t n =
      std::max<size_t>(batch, std::min<uint64_t>((per_thread + page - 1) / page, kMaxGetKeys));
  n = (n + batch - 1) / batch * batch;
  const auto usable = static_cast<uint64_t>(kUsableFraction * ctx.capacity_bytes);
  const size_t fit = usable / page / o.threads / batch * batch;
  if (fit < static_cast<size_t>(batch)) {
    return TooBig(static_cast<uint64_t>(o.threads) * batch * page, ctx.capacity_bytes);
  }
  return std::min(n, fit);
}

}  // namespace

Result<Row> RunRow(const RowContext& ctx, const Limits& limits, Workload w, uint64_t page_bytes,
                   int batch) {
  const BenchOptions& o = *ctx.options;
  Row row;
  row.workload = WorkloadName(w);
  row.mode = ModeName(ctx.mode);
  row.batch = batch;
  row.threads = o.threads;
  const bool data = w == Workload::kPut || w == Workload::kGet;
  row.page_bytes = data ? page_bytes : 0;
  WorkerFactory make;
  if (w == Workload::kPut) {
    const uint64_t need = static_cast<uint64_t>(o.threads) * batch * page_bytes;
    if (need > kUsableFraction * ctx.capacity_bytes) return TooBig(need, ctx.capacity_bytes);
    make = [&](int t) { return MakePutWorker(ctx, page_bytes, batch, t); };
  } else if (w == Workload::kGet) {
    auto keys = GetRowKeys(ctx, page_bytes, batch);
    if (!keys.ok()) return keys.status();
    make = [&, n = *keys](int t) { return MakeGetWorker(ctx, page_bytes, batch, t, n); };
  } else if (w == Workload::kExists || w == Workload::kPrefix) {
    make = [&](int t) { return MakeExistsWorker(ctx, batch, t, w == Workload::kPrefix); };
  } else {
    return Status(ErrorCode::INVALID_PARAMS, "RunRow does not run the hicache workload");
  }
  KVPOOL_RETURN_IF_ERROR(RunWorkers(ctx, o.threads, make, row));
  const LimitFigure* limit = data ? limits.For(ctx.mode, page_bytes) : nullptr;
  FinishRow(row, limit, LimitName(ctx.mode));
  if (!ctx.pool_cpu) row.note = "cpu: bench process only";
  return row;
}

Result<Row> RunFirstFillRow(const RowContext& ctx, const Limits& limits, uint64_t page_bytes,
                            int batch) {
  BenchOptions bounded = *ctx.options;
  const uint64_t per_call = static_cast<uint64_t>(bounded.threads) * batch * page_bytes;
  const auto calls = static_cast<int64_t>(kUsableFraction * ctx.capacity_bytes / per_call);
  if (calls == 0) return TooBig(per_call, ctx.capacity_bytes);
  bounded.iterations = bounded.iterations > 0 ? std::min(bounded.iterations, calls) : calls;
  RowContext first = ctx;
  first.options = &bounded;
  auto row = RunRow(first, limits, Workload::kPut, page_bytes, batch);
  if (row.ok()) row->workload = "put-first-fill";
  return row;
}

}  // namespace kvpool::tools::bench
