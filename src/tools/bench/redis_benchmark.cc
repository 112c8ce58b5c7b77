#include "tools/bench/redis_benchmark.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>

#include "common/child_process.h"
#include "common/units.h"
#include "tools/bench/pool_launcher.h"
#include "tools/bench/stats.h"

namespace kvpool::tools::bench {
namespace {

constexpr auto kRunTimeout = std::chrono::seconds(60);
constexpr uint64_t kBytesPerRun = 1ULL << 30;  // requests per run: this many bytes' worth,
constexpr uint64_t kMinRequests = 1000;        // within these bounds
constexpr uint64_t kMaxRequests = 100000;

struct Figure {
  double rps = 0;
  double p50_ms = 0, p99_ms = 0;
};

// The numbers of one `--csv` line: "NAME","rps","avg","min","p50","p95","p99","max".
bool ParseCsvLine(const std::string& line, const std::string& test, Figure& f) {
  if (line.rfind("\"" + test + "\"", 0) != 0) return false;
  std::vector<double> v;
  std::stringstream in(line);
  std::string cell;
  std::getline(in, cell, ',');  // the test name
  while (std::getline(in, cell, ',')) {
    cell.erase(std::remove(cell.begin(), cell.end(), '"'), cell.end());
    try {
      v.push_back(std::stod(cell));
    } catch (const std::exception&) {
      return false;
    }
  }
  if (v.size() < 6) return false;
  f = Figure{v[0], v[3], v[5]};
  return f.rps > 0;
}

std::vector<uint64_t> PagesOf(const BenchOptions& o) {
  if (!o.Has(Workload::kPut) && !o.Has(Workload::kGet)) return {};
  return o.page_list;
}

}  // namespace

Status RunRedisBenchmarkRows(const BenchOptions& o, const Limits& limits, const RedisServer& server,
                             std::stop_token stop, std::vector<Row>& rows) {
  const std::vector<uint64_t> pages = PagesOf(o);
  if (pages.empty()) return Status::Ok();
  const std::string program = FindInPath("redis-benchmark");
  if (program.empty()) {
    std::cout << "[redis] no redis-benchmark in PATH (package redis-tools): no redis-benchmark "
                 "rows\n";
    return Status::Ok();
  }
  for (uint64_t page : pages) {
    if (stop.stop_requested()) break;
    KVPOOL_RETURN_IF_ERROR(server.FlushAll());
    const uint64_t requests = std::clamp(kBytesPerRun / page, kMinRequests, kMaxRequests);
    auto child = ChildProcess::Start(
        "redis-benchmark", program,
        {"-h", "127.0.0.1", "-p", std::to_string(server.port()), "-t", "set,get", "-d",
         std::to_string(page), "-c", std::to_string(kRedisBenchmarkConnections), "-n",
         std::to_string(requests), "-r", "128", "--csv"},
        BenchChildOptions());
    if (!child.ok()) return child.status();
    const auto t0 = BenchClock::now();
    while (!(*child)->WaitExit(std::chrono::milliseconds(100))) {
      if (stop.stop_requested()) return Status::Ok();  // the child is stopped by its destructor
      if (BenchClock::now() - t0 > kRunTimeout) {
        return Status(ErrorCode::RPC_TIMEOUT,
                      fmt::format("redis-benchmark of {} pages did not finish within {} s: {}",
                                  FormatSize(page), kRunTimeout.count(), (*child)->LogTail()));
      }
    }
    const std::string log = (*child)->Log();
    if ((*child)->exit_status() != 0) {
      return Status(ErrorCode::INTERNAL_ERROR,
                    fmt::format("redis-benchmark exited with status {}: {}",
                                (*child)->exit_status(), (*child)->LogTail()));
    }
    for (const auto& [test, workload] : {std::pair{"SET", "put"}, std::pair{"GET", "get"}}) {
      if (!o.Has(workload == std::string("put") ? Workload::kPut : Workload::kGet)) continue;
      Figure f;
      bool found = false;
      std::stringstream lines(log);
      for (std::string line; std::getline(lines, line);)
        found = found || ParseCsvLine(line, test, f);
      if (!found) {
        return Status(
            ErrorCode::INTERNAL_ERROR,
            fmt::format("redis-benchmark printed no {} figure: {}", test, (*child)->LogTail()));
      }
      Row r;
      r.workload = workload;
      r.mode = "redis-bm";
      r.page_bytes = page;
      r.batch = 1;
      r.threads = kRedisBenchmarkConnections;
      r.calls = requests;
      r.keys = requests;
      r.bytes = requests * page;
      r.busy_s = static_cast<double>(requests) / f.rps;
      r.p50_us = f.p50_ms * 1000;
      r.p99_us = f.p99_ms * 1000;
      r.note = fmt::format("redis-benchmark -c {} -r 128", kRedisBenchmarkConnections);
      FinishRow(r, limits.For(Mode::kRemote, page), "tcp");
      std::cout << TableLine(r) << std::endl;
      rows.push_back(std::move(r));
    }
  }
  return Status::Ok();
}

void CompareWithRedisBenchmark(const std::vector<Row>& rows) {
  bool header = false;
  for (const Row& r : rows) {
    if (r.mode != "remote" || (r.workload != "put" && r.workload != "get")) continue;
    for (const Row& peer : rows) {
      if (peer.mode != "redis-bm" || peer.workload != r.workload ||
          peer.page_bytes != r.page_bytes || peer.gbps <= 0) {
        continue;
      }
      if (!header) {
        std::cout << fmt::format(
            "\nkvpool remote vs redis-benchmark ({} connections, same page size; GB/s):\n",
            kRedisBenchmarkConnections);
        header = true;
      }
      std::cout << fmt::format(
          "  {:<4} {:>7} x {:<4} thr {}: kvpool {:.2f}, redis-benchmark "
          "{:.2f}: {:.2f} x\n",
          r.workload, FormatSize(r.page_bytes), r.batch, r.threads, r.gbps, peer.gbps,
          r.gbps / peer.gbps);
    }
  }
}

}  // namespace kvpool::tools::bench
