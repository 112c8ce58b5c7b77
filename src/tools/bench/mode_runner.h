// One mode of a bench run: its pool (private, or the --master one), its client, and every row
// the options ask for in that mode, printed as each finishes.
#pragma once

#include <stop_token>
#include <vector>

#include "kvpool/status.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/limits.h"
#include "tools/bench/report.h"

namespace kvpool::tools::bench {

// Starts the mode's pool when no --master was given (embedded: the master only; remote: the
// master and --nodes nodes), sets up the client (embedded: with its own --segment_size segment),
// runs the rows and appends them to `rows`, then stops what it started. REQUIRES: called from
// the bench's main thread. Errors: the pool or client set-up error, or the first row error
// (wrong bytes, failed calls). Rows finished before an error or a stop request stay in `rows`.
Status RunMode(const BenchOptions& o, Mode mode, const Limits& limits, std::stop_token stop,
               std::vector<Row>& rows);

}  // namespace kvpool::tools::bench
