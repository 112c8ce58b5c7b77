// The put / get / exists / prefix rows: which rows a run has, and running one of them.
#pragma once

#include <cstdint>

#include "kvpool/status.h"
#include "tools/bench/limits.h"
#include "tools/bench/report.h"
#include "tools/bench/row_runner.h"

namespace kvpool::tools::bench {

// Runs workload `w` (not hicache) with `page_bytes` pages (ignored by exists / prefix) and
// `batch` keys per call on --threads threads, and returns the finished row (ratio to the
// mode's limit from `limits` when measured).
// Errors: the first failed call or wrong answer (WRONG BYTES / WRONG SIZE / WRONG ANSWER in the
// message), or INVALID_PARAMS when the row cannot fit in the pool's capacity.
Result<Row> RunRow(const RowContext& ctx, const Limits& limits, Workload w, uint64_t page_bytes,
                   int batch);

// The "put-first-fill" row: puts of fresh keys into the pool as it started, before anything
// wrote its segments, bounded to the usable space (every byte lands in memory never written
// before) and to --iterations when given. Errors: as RunRow; INVALID_PARAMS when not even one
// call fits.
Result<Row> RunFirstFillRow(const RowContext& ctx, const Limits& limits, uint64_t page_bytes,
                            int batch);

}  // namespace kvpool::tools::bench
