// The bench's private pool: one `kvpool master` and N `kvpool node` processes of this same
// binary on free ports of 127.0.0.1, started and stopped by one object.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "common/child_process.h"
#include "common/pool_commands.h"
#include "kvpool/status.h"
#include "rpc/security_options.h"

namespace kvpool::tools::bench {

struct PoolSpec {
  int nodes = 1;                        // storage nodes; 0 starts only the master (embedded mode)
  uint64_t segment_bytes = 0;           // DRAM each node serves
  rpc::SecurityOptions security;        // passed to the master and nodes as flags
  std::vector<std::string> node_flags;  // more flags for every node (--node_flags)
};

class LocalPool {
 public:
  // Starts the master, waits until it listens, starts the nodes and waits until the master
  // lists all their segments (each step within 20 s). REQUIRES: called from the bench's main
  // thread (see ChildProcess). Errors: RPC_TIMEOUT naming the process that did not come up,
  // with the end of its log; CANCELLED-like INTERNAL_ERROR when `stop` is requested meanwhile.
  static Result<std::unique_ptr<LocalPool>> Start(const PoolSpec& spec, std::stop_token stop);
  ~LocalPool();  // Stop()

  // Stops the nodes, then the master (SIGTERM, SIGKILL after 2 s) and reaps them. Idempotent.
  void Stop();
  std::string master_address() const { return LoopbackAddress(master_port_); }
  // "127.0.0.1:PORT" of each node (what a standalone client attaches to), in start order.
  std::vector<std::string> node_addresses() const;
  // Waits until every node's segment is resident (a node faults it in before it mounts unless
  // told to do so behind it, --prefault_in_background), so no later figure measures that; at
  // most 60 s (a node under memory pressure is measured as it is). Errors: a process that exited
  // (see CheckAlive), INTERNAL_ERROR "interrupted" on `stop`.
  Status WaitResident(uint64_t segment_bytes, std::stop_token stop);
  // CPU seconds used by all the pool's processes so far.
  double CpuSeconds() const;
  // OK while every process runs; else INTERNAL_ERROR naming the one that exited, with its log.
  Status CheckAlive();

 private:
  LocalPool() = default;
  Status StartMaster(const PoolSpec& spec, std::stop_token stop);
  Status StartNodes(const PoolSpec& spec, std::stop_token stop);

  uint16_t master_port_ = 0;
  std::unique_ptr<ChildProcess> master_;
  std::vector<std::unique_ptr<ChildProcess>> nodes_;
  std::vector<uint16_t> node_ports_;
};

// How the bench starts every child (common/child_process.h): each dies with the bench's main
// thread, even when the bench is SIGKILLed, and has its own process group, so a terminal's
// Ctrl-C reaches only the bench, which then stops them in order (SIGTERM, SIGKILL after 2 s).
ChildOptions BenchChildOptions();

}  // namespace kvpool::tools::bench
