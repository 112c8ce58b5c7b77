// The machine's limits, measured in the same run right before the workloads, against which each
// kvpool figure is printed as a ratio:
//  - memcpy: one thread copying pages of the given size from a source region as large as the
//    get rows' working set into a destination region (like a get: segment -> caller's pages);
//  - TCP: plain blocking senders in another process (`kvpool bench-tcp-peer`, this binary
//    re-executed) streaming pages of the given size over 1, 2 and 4 loopback connections to
//    blocking receivers in the bench (a thread per connection), which read the pages in turn
//    into a destination as large as one batch, as a get fills a batch's pages. The best of the
//    three stream counts is the limit: a kvpool client moves a batch over several connections.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <stop_token>
#include <string>

#include "kvpool/status.h"
#include "tools/bench/bench_options.h"

namespace kvpool::tools::bench {

struct LimitFigure {
  double gbps = 0;          // 10^9 bytes per second
  double cpu_s_per_gb = 0;  // CPU seconds (both ends for TCP) per 10^9 bytes
  int streams = 1;          // TCP: the connections that gave this figure
};

struct Limits {
  std::map<uint64_t, LimitFigure> memcpy_by_page;  // page bytes -> figure
  std::map<uint64_t, LimitFigure> tcp_by_page;
  // The limit a row of `mode` is compared with (see LimitName); nullptr
  // when it was not measured.
  const LimitFigure* For(Mode mode, uint64_t page_bytes) const;
};

// Copies pages of `page_bytes` from `src` into `dst`, cycling through both, for `seconds`.
// REQUIRES: each region holds at least one page and was touched already (no page faults timed).
LimitFigure MeasureMemcpy(uint64_t page_bytes, std::span<uint8_t> src, std::span<uint8_t> dst,
                          double seconds);

// Streams pages of `page_bytes` for `seconds` from a child `bench-tcp-peer` process to this one
// over `streams` connections on 127.0.0.1, each received by a thread of its own into its slice
// of `dst` (page after page, cycling). Every socket wait is bounded (10 s past `seconds`).
// REQUIRES: called from the bench's main thread (see ChildProcess); `dst` holds at least one
// page and was touched already. Errors: RPC_FAIL / RPC_TIMEOUT with the reason and the peer's
// log; INTERNAL_ERROR when the peer cannot start.
Result<LimitFigure> MeasureTcp(uint64_t page_bytes, std::span<uint8_t> dst, int streams,
                               double seconds);

// The body of the hidden `kvpool bench-tcp-peer --connect 127.0.0.1:PORT` command: connects,
// opens `--streams` connections, and on each (a thread per connection) reads the page size and
// duration, sends pages until the duration has passed, half-closes, and waits for the
// receiver's byte count. Returns the process exit code (0 when the receiver counted every byte
// sent on every connection).
int RunTcpPeer(const TcpPeerOptions& options);

// Measures every limit the rows of `o` need, printing one line per figure to stdout.
// Returns the first TCP error (the memcpy figures cannot fail).
Result<Limits> MeasureLimits(const BenchOptions& o, std::stop_token stop);

}  // namespace kvpool::tools::bench
