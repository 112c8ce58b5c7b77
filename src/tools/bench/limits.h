// The machine's limits, measured in the same run right before the workloads, against which each
// kvpool figure is printed as a ratio:
//  - memcpy: one thread copying pages of the given size from a source region as large as the
//    get rows' working set into a destination region (like a get: segment -> caller's pages);
//  - TCP: a plain blocking sender in another process (`kvpool bench-tcp-peer`, this binary
//    re-executed) streaming pages of the given size over one loopback connection to a blocking
//    receiver in the bench, which reads each page into one page-sized buffer.
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
// over 127.0.0.1. Every socket wait is bounded (10 s past `seconds`). REQUIRES: called from the
// bench's main thread (see ChildProcess). Errors: RPC_FAIL / RPC_TIMEOUT with the reason and the
// peer's log; INTERNAL_ERROR when the peer cannot start.
Result<LimitFigure> MeasureTcp(uint64_t page_bytes, double seconds);

// The body of the hidden `kvpool bench-tcp-peer --connect 127.0.0.1:PORT` command: connects,
// reads the page size and duration, sends pages until the duration has passed, half-closes, and
// waits for the receiver's byte count. Returns the process exit code (0 when the receiver
// counted every byte sent).
int RunTcpPeer(const TcpPeerOptions& options);

// Measures every limit the rows of `o` need, printing one line per figure to stdout.
// Returns the first TCP error (the memcpy figures cannot fail).
Result<Limits> MeasureLimits(const BenchOptions& o, std::stop_token stop);

}  // namespace kvpool::tools::bench
