// Options of `kvpool bench`: one plain struct filled from flags by AddBenchFlags and checked and
// parsed (lists, sizes) in one place by ValidateBenchOptions. Nothing else reads flags.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "kvpool/status.h"
#include "rpc/security_options.h"

namespace kvpool::tools::bench {

// embedded: the bench's client contributes its own segment (bytes move by memcpy in-process);
// standalone: it attaches to a local `kvpool node` that moves the bytes between its segment and
// the bench's HostMemAllocator pages (one copy, shared memory); remote: segments live in node
// processes and bytes cross TCP loopback.
enum class Mode { kEmbedded, kStandalone, kRemote };
enum class Workload { kPut, kGet, kExists, kPrefix, kHicache, kMasterMemory };

const char* ModeName(Mode m);
// The limit a mode's data rows are compared with: "memcpy" (embedded, standalone) or "tcp".
const char* LimitName(Mode m);
const char* WorkloadName(Workload w);

// The simulated HiCache deployment of `--workload hicache`.
struct HicacheOptions {
  int engines = 2;                  // --engines: simulated inference engines, 1..16
  bool processes = false;           // --engine_processes: one process per engine, not a thread
  int conversations = 48;           // --conversations: live conversations at any time
  int system_prompts = 6;           // --system_prompts: distinct shared system prompts
  int system_prompt_pages = 24;     // --system_prompt_pages: pages per system prompt
  int max_turns = 12;               // --max_turns: turns before a conversation ends (4..max)
  int l2_pages = 256;               // --l2_pages: pages each engine keeps in its own host memory
  std::string page_size = "256KB";  // --hicache_page_size
  uint64_t page_bytes = 0;          // parsed from page_size
};

struct BenchOptions {
  // --master host:port: drive an existing pool. Empty (default): start a private pool of
  // `kvpool master` (+ nodes) processes on free 127.0.0.1 ports for each mode, stopped at exit.
  std::string master;
  // --local_node host:port: the `kvpool node` on this machine that standalone mode attaches to
  // when --master is given (a private pool uses its own nodes).
  std::string local_node;
  // --mode: embedded, remote or both. Empty (default): both, or remote alone when hicache is the
  // only workload.
  std::string modes;
  std::string workloads = "put,get,exists";       // --workload (put,get,exists,prefix,hicache)
  std::string page_sizes = "64KB,256KB,1MB,4MB";  // --page_size
  std::string batches = "1,32,128";               // --batch: keys per batch call
  int threads = 1;                                // --threads: client threads, 1..64
  // --duration_s: seconds per measured row; 0 (default) = 1 s per row, 20 s for hicache.
  double duration_s = 0;
  // --iterations: batch calls per thread per row instead of a duration (0 = use duration).
  int64_t iterations = 0;
  int nodes = 0;  // --nodes: storage nodes for remote mode; 0 = 1 (2 when hicache runs)
  // --segment_size: per node, and the embedded segment. Empty (default): 2GB, or 1GB when
  // hicache is the only workload (so its 20 s fill the pool and eviction plays its part).
  std::string segment_size;
  // --working_set: bytes of distinct keys a get row cycles through (all threads together),
  // also the source region of the memcpy limit. Larger than the caches keeps the figures honest.
  std::string working_set = "256MB";
  int verify_every = 4;    // --verify_every: check every Nth get call byte-exact (1 = all)
  bool no_limits = false;  // --no_limits: skip the memcpy / TCP limit measurements
  // --no_first_fill clears it: with a private pool and the put workload, each mode first runs
  // one "put-first-fill" row (the first page size, the largest batch) into the segments as the
  // pool started them, before the warm-up writes them: what a user's first puts meet.
  bool first_fill = true;
  // --node_flags "FLAGS": more flags for the private pool's nodes, split at spaces (e.g.
  // "--prefault_in_background" to compare a node that serves before its memory is backed).
  std::string node_flags;
  std::string json_path;  // --json FILE: also write the rows as JSON
  bool progress = true;   // --no_progress clears it: no in-place progress line on a TTY
  // --peers: other stores the remote put/get rows are compared with: "redis" (default; skipped
  // with a note when no redis-server is installed) or "none".
  std::string peers = "redis";
  // --auth_secret_file, --tls_*: for the bench's clients and, passed on, its private pool's
  // master and nodes (docs/security.md). $KVPOOL_AUTH_SECRET reaches them by inheritance.
  rpc::SecurityOptions security;
  HicacheOptions hicache;
  // --master_objects: objects the master_memory workload puts into an in-process master core.
  uint64_t master_objects = 5'000'000;

  // Filled by ValidateBenchOptions.
  std::vector<Mode> mode_list;
  std::vector<Workload> workload_list;
  std::vector<uint64_t> page_list;
  std::vector<int> batch_list;
  uint64_t segment_bytes = 0;
  uint64_t working_set_bytes = 0;
  int node_count = 0;
  bool redis_peer = false;  // --peers has redis

  bool Has(Workload w) const;
  // True when a workload needs a pool (every one but master_memory, which runs in-process).
  bool NeedsPool() const;
  // Seconds a row (or the hicache run) lasts when bounded by time.
  double RowSeconds() const { return duration_s > 0 ? duration_s : 1.0; }
  double HicacheSeconds() const { return duration_s > 0 ? duration_s : 20.0; }
};

// Options of the hidden `bench-tcp-peer` command: the sending half of the TCP limit.
struct TcpPeerOptions {
  std::string connect;              // --connect 127.0.0.1:PORT
  int streams = 1;                  // --streams N: connections, one sending thread each
  uint64_t page_bytes = 1 << 20;    // --page_bytes: the bytes of one send (a multiple of 8)
  uint64_t source_bytes = 1 << 20;  // --source_bytes: each stream cycles through this much memory
};

// Registers the flags above on `cmd`, writing into `o` (which must outlive parsing).
void AddBenchFlags(CLI::App& cmd, BenchOptions& o);
void AddTcpPeerFlags(CLI::App& cmd, TcpPeerOptions& o);

// Parses the lists and sizes into the fields below them and checks every range.
// Errors: INVALID_PARAMS naming the flag, the value and what is accepted.
Status ValidateBenchOptions(BenchOptions& o);

}  // namespace kvpool::tools::bench
