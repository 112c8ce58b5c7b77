#include "tools/bench/hicache_process.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/child_process.h"
#include "tools/bench/hicache_sim.h"
#include "tools/bench/payload.h"
#include "tools/bench/pool_launcher.h"
#include "tools/bench/stats.h"

namespace kvpool::tools::bench {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(BenchClock::now().time_since_epoch())
      .count();
}

nlohmann::json TallyJson(const ThreadTally& t) {
  return {{"latency_ns", t.latency_ns}, {"calls", t.calls},   {"keys", t.keys},
          {"bytes", t.bytes},           {"busy_s", t.busy_s}, {"side_cpu_s", t.side_cpu_s},
          {"verified", t.verified}};
}

void TallyFrom(const nlohmann::json& j, ThreadTally& t) {
  t.latency_ns = j.at("latency_ns").get<std::vector<int64_t>>();
  t.calls = j.at("calls");
  t.keys = j.at("keys");
  t.bytes = j.at("bytes");
  t.busy_s = j.at("busy_s");
  t.side_cpu_s = j.at("side_cpu_s");
  t.verified = j.at("verified");
}

// The counters an engine process reports, by name.
struct CounterField {
  const char* name;
  std::atomic<uint64_t> HicacheCounters::*field;
};
constexpr CounterField kCounterFields[] = {
    {"turns", &HicacheCounters::turns},
    {"pages_asked", &HicacheCounters::pages_asked},
    {"l2_hits", &HicacheCounters::l2_hits},
    {"l3_hits", &HicacheCounters::l3_hits},
    {"lost_races", &HicacheCounters::lost_races},
    {"new_pages", &HicacheCounters::new_pages},
    {"dropped", &HicacheCounters::dropped},
    {"bytes_read", &HicacheCounters::bytes_read},
    {"bytes_written", &HicacheCounters::bytes_written},
};

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from < s.size()) {
    size_t to = s.find(',', from);
    if (to == std::string::npos) to = s.size();
    if (to > from) out.push_back(s.substr(from, to - from));
    from = to + 1;
  }
  return out;
}

}  // namespace

void AddEngineProcessFlags(CLI::App& cmd, EngineProcessOptions& o) {
  AddBenchFlags(cmd, o.bench);
  cmd.add_option("--local_nodes", o.nodes, "standalone attach addresses");
  cmd.add_option("--index", o.index, "engine number");
  cmd.add_option("--key_prefix", o.key_prefix, "the run's key prefix")->required();
  cmd.add_option("--start_ns", o.start_ns, "steady-clock start");
  cmd.add_option("--result", o.result, "result file")->required();
}

int RunEngineProcess(EngineProcessOptions& o) {
  if (Status st = ValidateBenchOptions(o.bench); !st.ok() || o.bench.mode_list.size() != 1) {
    std::cerr << "bench-hicache-engine: " << st.message() << "\n";
    return 2;
  }
  HicacheContext ctx;
  ctx.master_address = o.bench.master;
  ctx.local_nodes = SplitComma(o.nodes);
  ctx.mode = o.bench.mode_list.front();
  ctx.options = &o.bench;
  ctx.key_prefix = o.key_prefix;
  const uint64_t seed = Mix64(std::hash<std::string>()(ctx.key_prefix));
  PagePattern pattern(o.bench.hicache.page_bytes, seed);
  // Each process has its own table from the same seed: the same system prompts (equal keys in
  // every engine), its own conversations.
  ConversationTable table(o.bench.hicache, seed + static_cast<uint64_t>(o.index));
  HicacheCounters counters;
  Engine engine(o.index, ctx, table, pattern, counters);
  Status st = engine.Setup();
  const auto start = BenchClock::time_point(std::chrono::nanoseconds(o.start_ns));
  const auto deadline = start + std::chrono::duration_cast<BenchClock::duration>(
                                    std::chrono::duration<double>(o.bench.HicacheSeconds()));
  if (st.ok()) std::this_thread::sleep_until(start);
  while (st.ok() && BenchClock::now() < deadline) st = engine.RunTurn();
  engine.Cleanup();
  if (!st.ok()) {
    std::cerr << "bench-hicache-engine " << o.index << ": " << st.ToString() << "\n";
    return 1;
  }
  nlohmann::json doc;
  EngineTallies& t = engine.tallies();
  doc["exists"] = TallyJson(t.exists);
  doc["get"] = TallyJson(t.get);
  doc["put"] = TallyJson(t.put);
  doc["turn"] = TallyJson(t.turn);
  for (const auto& c : kCounterFields) doc["counters"][c.name] = (counters.*c.field).load();
  std::ofstream out(o.result);
  out << doc.dump();
  out.close();
  if (!out) {
    std::cerr << "bench-hicache-engine: cannot write " << o.result << "\n";
    return 1;
  }
  return 0;
}

Status RunEngineProcesses(const HicacheContext& ctx, std::vector<EngineTallies>& tallies,
                          HicacheCounters& counters, double& cpu_s, double& wall_s) {
  const BenchOptions& o = *ctx.options;
  const HicacheOptions& h = o.hicache;
  std::string nodes;
  for (const auto& n : ctx.local_nodes) nodes += (nodes.empty() ? "" : ",") + n;
  // Set-up (client, pages) takes well under 3 s; the engines then start together.
  const int64_t start_ns = NowNs() + 3'000'000'000;
  std::vector<std::unique_ptr<ChildProcess>> children;
  std::vector<std::string> results;
  for (int i = 0; i < h.engines; ++i) {
    char tmpl[] = "/tmp/kvpool-bench-engine-XXXXXX";
    int fd = ::mkstemp(tmpl);
    if (fd < 0) return Status(ErrorCode::INTERNAL_ERROR, "hicache: cannot create a result file");
    ::close(fd);
    results.push_back(tmpl);
    auto child = ChildProcess::StartSelf(fmt::format("hicache engine {}", i),
                                         {"bench-hicache-engine",
                                          "--master",
                                          ctx.master_address,
                                          "--local_nodes",
                                          nodes,
                                          "--mode",
                                          ModeName(ctx.mode),
                                          "--workload",
                                          "hicache",
                                          "--index",
                                          std::to_string(i),
                                          "--key_prefix",
                                          ctx.key_prefix,
                                          "--start_ns",
                                          std::to_string(start_ns),
                                          "--result",
                                          tmpl,
                                          "--engines",
                                          std::to_string(h.engines),
                                          "--conversations",
                                          std::to_string(h.conversations),
                                          "--system_prompts",
                                          std::to_string(h.system_prompts),
                                          "--system_prompt_pages",
                                          std::to_string(h.system_prompt_pages),
                                          "--max_turns",
                                          std::to_string(h.max_turns),
                                          "--l2_pages",
                                          std::to_string(h.l2_pages),
                                          "--hicache_page_size",
                                          std::to_string(h.page_bytes),
                                          "--segment_size",
                                          std::to_string(o.segment_bytes),
                                          "--verify_every",
                                          std::to_string(o.verify_every),
                                          "--duration_s",
                                          fmt::format("{}", o.HicacheSeconds())},
                                         BenchChildOptions());
    if (!child.ok()) return child.status();
    children.push_back(std::move(child).value());
  }
  const double pool0 = ctx.pool_cpu ? ctx.pool_cpu() : 0;
  const auto t0 = BenchClock::time_point(std::chrono::nanoseconds(start_ns));
  const auto give_up = t0 + std::chrono::duration_cast<BenchClock::duration>(
                                std::chrono::duration<double>(o.HicacheSeconds() + 60));
  Status failed = Status::Ok();
  for (auto& c : children) {
    while (c->Running() && BenchClock::now() < give_up && !ctx.stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (c->Running()) {
      c->Stop(std::chrono::seconds(1));
      if (failed.ok()) {
        failed = Status(ErrorCode::RPC_TIMEOUT, fmt::format("{} did not finish", c->name()));
      }
    } else if (c->exit_status() != 0 && failed.ok()) {
      failed =
          Status(ErrorCode::INTERNAL_ERROR, fmt::format("{} exited with {}; its log:\n{}",
                                                        c->name(), c->exit_status(), c->LogTail()));
    }
  }
  wall_s = SecondsSince(t0);
  cpu_s = (ctx.pool_cpu ? ctx.pool_cpu() : 0) - pool0;
  for (auto& c : children) cpu_s += c->CpuSeconds();
  tallies.assign(children.size(), EngineTallies());
  for (size_t i = 0; i < results.size() && failed.ok(); ++i) {
    try {
      std::ifstream in(results[i]);
      nlohmann::json doc = nlohmann::json::parse(in);
      TallyFrom(doc.at("exists"), tallies[i].exists);
      TallyFrom(doc.at("get"), tallies[i].get);
      TallyFrom(doc.at("put"), tallies[i].put);
      TallyFrom(doc.at("turn"), tallies[i].turn);
      for (const auto& c : kCounterFields) {
        counters.*c.field += doc.at("counters").at(c.name).get<uint64_t>();
      }
    } catch (const std::exception& e) {
      failed = Status(ErrorCode::INTERNAL_ERROR,
                      fmt::format("hicache engine {}: unreadable result: {}", i, e.what()));
    }
  }
  for (const auto& r : results) std::remove(r.c_str());
  return failed;
}

}  // namespace kvpool::tools::bench
