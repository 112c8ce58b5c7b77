// Redis's own load generator as a second Redis figure: `redis-benchmark` (from redis-tools)
// against the bench's private redis-server, SET and GET of each page size of the put/get rows
// with 4 connections (`-c 4 -r 128`), the figure issue 14 compares kvpool's remote gets with.
// Unlike the hiredis rows (redis_peer.h) it is Redis at its best on this machine: four
// connections in parallel and a C client built for it, not the bench's one thread.
#pragma once

#include <stop_token>
#include <vector>

#include "kvpool/status.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/limits.h"
#include "tools/bench/redis_peer.h"
#include "tools/bench/report.h"

namespace kvpool::tools::bench {

// Connections redis-benchmark opens.
constexpr int kRedisBenchmarkConnections = 4;

// Appends rows of mode "redis-bm" (batch 1, threads = connections; x limit: the TCP
// limit) for every page size of `o`'s put and get rows, when `redis-benchmark` is in $PATH
// (else prints a note and appends nothing). Each run is stopped on `stop` (no error).
// Errors: INTERNAL_ERROR when it cannot start, exits non-zero or prints no figure;
// RPC_TIMEOUT when a run takes over 60 s (each with its output).
Status RunRedisBenchmarkRows(const BenchOptions& o, const Limits& limits, const RedisServer& server,
                             std::stop_token stop, std::vector<Row>& rows);

// Prints each remote put/get row's GB/s over its page size's redis-benchmark figure.
void CompareWithRedisBenchmark(const std::vector<Row>& rows);

}  // namespace kvpool::tools::bench
