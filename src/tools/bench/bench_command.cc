#include "tools/bench/bench_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include "common/units.h"
#include "tools/bench/hicache_process.h"
#include "tools/bench/interrupt.h"
#include "tools/bench/limits.h"
#include "tools/bench/master_memory.h"
#include "tools/bench/mode_runner.h"
#include "tools/bench/redis_benchmark.h"
#include "tools/bench/redis_peer.h"
#include "tools/bench/report.h"

namespace kvpool::tools::bench {
namespace {

// "2 CPUs (Intel(R) Xeon(R) Processor), 23.4 GiB RAM".
std::string DescribeMachine() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  const uint64_t ram = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                       static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return fmt::format("{} CPUs ({}), {} RAM", ::sysconf(_SC_NPROCESSORS_ONLN), model,
                     FormatSize(ram));
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

void PrintPlan(const BenchOptions& o, const std::string& machine) {
  std::vector<std::string> modes, workloads;
  for (Mode m : o.mode_list) modes.push_back(ModeName(m));
  for (Workload w : o.workload_list) workloads.push_back(WorkloadName(w));
  std::cout << fmt::format("kvpool bench on {}\n", machine);
  std::cout << fmt::format("  modes {}, workloads {}, {} thread(s), pool {}\n", Join(modes),
                           Join(workloads), o.threads,
                           o.master.empty() ? fmt::format("private (127.0.0.1, {} node(s) of {} "
                                                          "for standalone / remote)",
                                                          o.node_count, FormatSize(o.segment_bytes))
                                            : "at " + o.master);
  std::cout << "  GB/s = 10^9 bytes per second of time inside kvpool calls; latency per batch "
               "call; x limit = GB/s / the limit below\n\n";
}

// The Redis rows (after the kvpool rows, so both see the same machine state in one run).
Status RunRedisPeer(const BenchOptions& o, const Limits& limits, std::stop_token stop,
                    std::vector<Row>& rows) {
  const bool wanted =
      std::find(o.mode_list.begin(), o.mode_list.end(), Mode::kRemote) != o.mode_list.end() &&
      (o.Has(Workload::kPut) || o.Has(Workload::kGet));
  if (!o.redis_peer || !wanted) return Status::Ok();
  const std::string program = FindRedisServer();
  if (program.empty()) {
    std::cout << "[redis] no redis-server in PATH: no Redis comparison (scripts/install-deps.sh "
                 "installs it; --peers none hides this note)\n";
    return Status::Ok();
  }
  auto server = RedisServer::Start(program, o.segment_bytes);
  if (!server.ok()) return server.status();
  std::cout << fmt::format(
      "[redis] private {} on 127.0.0.1:{} (no persistence, maxmemory {}, "
      "allkeys-lru)\n",
      program, (*server)->port(), FormatSize(o.segment_bytes));
  std::cout << TableHeader() << std::endl;
  KVPOOL_RETURN_IF_ERROR(RunRedisRows(o, limits, **server, stop, rows));
  KVPOOL_RETURN_IF_ERROR(RunRedisBenchmarkRows(o, limits, **server, stop, rows));
  CompareWithRedis(rows);
  CompareWithRedisBenchmark(rows);
  return Status::Ok();
}

}  // namespace

int RunBench(BenchOptions& o) {
  if (Status st = ValidateBenchOptions(o); !st.ok()) {
    std::cerr << "kvpool bench: " << st.message() << "\n";
    return 2;
  }
  InterruptWatcher watcher;
  const std::string machine = DescribeMachine();
  PrintPlan(o, machine);
  std::vector<Row> rows;
  Status failure = Status::Ok();
  if (o.Has(Workload::kMasterMemory)) failure = RunMasterMemory(o, watcher.token(), rows);
  auto limits = o.NeedsPool() ? MeasureLimits(o, watcher.token()) : Result<Limits>(Limits());
  if (failure.ok()) failure = limits.status();
  for (Mode mode : o.mode_list) {
    if (!o.NeedsPool()) break;
    if (!failure.ok() || watcher.token().stop_requested()) break;
    failure = RunMode(o, mode, limits.ok() ? *limits : Limits(), watcher.token(), rows);
    std::cout << std::endl;
  }
  if (failure.ok() && !watcher.token().stop_requested()) {
    failure = RunRedisPeer(o, limits.ok() ? *limits : Limits(), watcher.token(), rows);
  }
  if (!o.json_path.empty()) {
    Status st = WriteJson(o.json_path, limits.ok() ? *limits : Limits(), rows, machine);
    if (!st.ok()) std::cerr << "kvpool bench: " << st.message() << "\n";
    if (st.ok()) std::cout << "rows written to " << o.json_path << "\n";
  }
  if (!failure.ok() && watcher.signal() == 0) {
    std::cerr << "kvpool bench: FAILED: " << failure.ToString() << "\n";
    return 1;
  }
  return watcher.signal() != 0 ? 130 : 0;
}

void AddBenchCommands(CLI::App& app, BenchCommandOptions& o, int& exit_code) {
  auto* bench =
      app.add_subcommand("bench", "Benchmark kvpool against this machine's memcpy and TCP limits");
  AddBenchFlags(*bench, o.bench);
  bench->callback([&] { exit_code = RunBench(o.bench); });

  auto* peer = app.add_subcommand("bench-tcp-peer", "The sender of the bench's TCP limit");
  peer->group("");  // hidden: the bench starts it
  AddTcpPeerFlags(*peer, o.tcp_peer);
  peer->callback([&] { exit_code = RunTcpPeer(o.tcp_peer); });

  auto* engine = app.add_subcommand("bench-hicache-engine", "One hicache engine process");
  engine->group("");  // hidden: the bench starts it
  AddEngineProcessFlags(*engine, o.engine);
  engine->callback([&] { exit_code = RunEngineProcess(o.engine); });
}

}  // namespace kvpool::tools::bench
