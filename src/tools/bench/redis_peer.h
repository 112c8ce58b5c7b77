// The Redis comparison of `kvpool bench --peers redis`: a private `redis-server` (loopback, a
// free port, no persistence, its own temporary directory, stopped at exit) driven through
// hiredis with the same page sizes, batch sizes, threads and page contents as the kvpool remote
// rows: a batch put is a pipeline of SETs, a batch get a pipeline of GETs, and every get
// reply is checked byte-exact every --verify_every'th call (the last put batch is read back).
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "common/child_process.h"
#include "kvpool/status.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/limits.h"
#include "tools/bench/report.h"

namespace kvpool::tools::bench {

// The path of `redis-server` in $PATH; empty when there is none.
std::string FindRedisServer();
// The path of `program` in $PATH; empty when there is none.
std::string FindInPath(const std::string& program);

class RedisServer {
 public:
  // Starts `program` on a free 127.0.0.1 port with --maxmemory `max_bytes` (allkeys-lru, so it
  // evicts as a full kvpool pool does) and waits until it answers PING.
  // Errors: INTERNAL_ERROR (temporary directory, fork), RPC_TIMEOUT (no answer within 10 s,
  // with the server's log).
  static Result<std::unique_ptr<RedisServer>> Start(const std::string& program, uint64_t max_bytes);
  ~RedisServer();  // stops the server and removes its directory
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  uint16_t port() const { return port_; }
  double CpuSeconds() const { return process_->CpuSeconds(); }
  // Drops every key (between rows). Errors: RPC_FAIL.
  Status FlushAll() const;

 private:
  RedisServer(std::string dir, uint16_t port, std::unique_ptr<ChildProcess> process)
      : dir_(std::move(dir)), port_(port), process_(std::move(process)) {}
  std::string dir_;
  uint16_t port_;
  std::unique_ptr<ChildProcess> process_;
};

// Runs the put and get rows of `o` (every page size x batch, `o.threads` threads) against
// `server`, appending rows of mode "redis" (x limit: the same TCP limit as remote rows).
// Errors: a failed command or WRONG BYTES, naming the key.
Status RunRedisRows(const BenchOptions& o, const Limits& limits, const RedisServer& server,
                    std::stop_token stop, std::vector<Row>& rows);

// Sets `vs_peer` of every remote put/get row that has a Redis twin (same workload, page, batch,
// threads) to its GB/s over the twin's, and prints those ratios.
void CompareWithRedis(std::vector<Row>& rows);

}  // namespace kvpool::tools::bench
