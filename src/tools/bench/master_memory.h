// `kvpool bench --workload master_memory`: the master's metadata cost at scale, measured on the
// master core in this process (no RPC, no other allocations in the way): it mounts segments
// large enough for --master_objects objects (the master never touches segment memory, so
// nothing is mapped), puts that many objects with realistic HiCache keys in batches of 1024
// (PutStart + PutEnd, as clients do), and reports
//   - the RSS growth per object, and that growth minus the key bytes (issue 6: <= 128 B + key);
//   - lookups per CPU-second of one thread: BatchIsExist (Exists) and BatchGet's location
//     lookup (GetReplicaList, with its read lease) over random present keys, batches of 128.
// Bounded: the fill stops after 45 s (--duration_s sets another bound: a loaded machine may
// need longer for 5 M objects), the lookups run 1 s each.
#pragma once

#include <stop_token>
#include <vector>

#include "kvpool/status.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/report.h"

namespace kvpool::tools::bench {

// Appends rows "master-fill" (keys = objects put; note: bytes per object), "master-exists" and
// "master-locate" (keys_per_s per CPU-second of the calling thread). Errors: a failed put.
Status RunMasterMemory(const BenchOptions& o, std::stop_token stop, std::vector<Row>& rows);

}  // namespace kvpool::tools::bench
