// What one measured row of the bench is, and how rows are printed and written as JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvpool/status.h"
#include "tools/bench/limits.h"

namespace kvpool::tools::bench {

struct Row {
  std::string workload;     // put, get, exists, prefix, hicache-exists, hicache-get, hicache-put
  std::string mode;         // embedded, remote
  uint64_t page_bytes = 0;  // 0 for metadata-only workloads
  int batch = 0;            // keys per call (hicache: the largest batch seen)
  int threads = 0;
  uint64_t calls = 0;                          // batch calls measured
  uint64_t keys = 0;                           // keys in those calls
  uint64_t bytes = 0;                          // payload bytes moved
  double busy_s = 0;                           // the longest thread's time inside kvpool calls
  double gbps = 0;                             // bytes / busy_s / 1e9
  double keys_per_s = 0;                       // keys / busy_s
  double p50_us = 0, p99_us = 0, p999_us = 0;  // per batch call
  std::string limit_name;                      // "memcpy", "tcp" or empty
  double limit_gbps = 0;                       // 0 when not measured
  double ratio = 0;                            // gbps / limit_gbps, 0 when no limit
  double cpu_s = 0;         // CPU of the bench and its pool processes during the row
  double cpu_s_per_gb = 0;  // cpu_s / (bytes / 1e9); 0 when no bytes moved
  double pool_cpu_s = 0;    // the part of cpu_s used by the pool's processes (master, nodes)
  uint64_t verified = 0;    // keys checked byte-exact
  double vs_redis = 0;      // remote put/get rows: GB/s / the Redis row's GB/s (0: none)
  std::string note;         // anything odd ("cpu excludes external pool")
};

// Fills the derived fields (gbps, keys_per_s, ratio, cpu_s_per_gb) from the raw ones.
void FinishRow(Row& row, const LimitFigure* limit, const std::string& limit_name);

// The table header and one line per row, for a terminal (fixed-width columns).
std::string TableHeader();
std::string TableLine(const Row& row);

// Writes {"limits": {...}, "rows": [...]} to `path`.
// Errors: FILE_OPEN_FAIL / FILE_WRITE_FAIL naming the path.
Status WriteJson(const std::string& path, const Limits& limits, const std::vector<Row>& rows,
                 const std::string& machine);

}  // namespace kvpool::tools::bench
