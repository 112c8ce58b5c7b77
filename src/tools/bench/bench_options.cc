#include "tools/bench/bench_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "common/units.h"

namespace kvpool::tools::bench {
namespace {

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    start = end + 1;
  }
  return out;
}

Status Bad(std::string_view flag, std::string_view value, std::string_view accepted) {
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("--{} '{}' is not valid: {}", flag, value, accepted));
}

Status ParseModes(BenchOptions& o) {
  std::string modes = o.modes;
  if (modes.empty()) {
    const bool only_hicache = o.workload_list.size() == 1 && o.Has(Workload::kHicache);
    modes = only_hicache ? "remote" : "embedded,standalone,remote";
  }
  for (const auto& m : SplitList(modes)) {
    if (m == "embedded") {
      o.mode_list.push_back(Mode::kEmbedded);
    } else if (m == "standalone") {
      o.mode_list.push_back(Mode::kStandalone);
    } else if (m == "remote") {
      o.mode_list.push_back(Mode::kRemote);
    } else {
      return Bad("mode", m, "use embedded, standalone, remote, or a list (embedded,remote)");
    }
  }
  if (o.mode_list.empty()) return Bad("mode", o.modes, "name at least one mode");
  return Status::Ok();
}

Status ParseWorkloads(BenchOptions& o) {
  for (const auto& w : SplitList(o.workloads)) {
    if (w == "put") {
      o.workload_list.push_back(Workload::kPut);
    } else if (w == "get") {
      o.workload_list.push_back(Workload::kGet);
    } else if (w == "exists") {
      o.workload_list.push_back(Workload::kExists);
    } else if (w == "prefix") {
      o.workload_list.push_back(Workload::kPrefix);
    } else if (w == "hicache") {
      o.workload_list.push_back(Workload::kHicache);
    } else if (w == "master_memory") {
      o.workload_list.push_back(Workload::kMasterMemory);
    } else {
      return Bad("workload", w,
                 "use put, get, exists, prefix, hicache or master_memory (comma-separated)");
    }
  }
  if (o.workload_list.empty()) return Bad("workload", o.workloads, "name at least one workload");
  return Status::Ok();
}

Status ParsePages(BenchOptions& o) {
  for (const auto& p : SplitList(o.page_sizes)) {
    auto size = ParseSize(p, "--page_size");
    if (!size.ok()) return size.status();
    if (*size < 8 || *size % 8 != 0 || *size > (256ULL << 20)) {
      return Bad("page_size", p, "a multiple of 8 bytes from 8 B to 256 MiB");
    }
    o.page_list.push_back(*size);
  }
  if (o.page_list.empty()) return Bad("page_size", o.page_sizes, "name at least one size");
  return Status::Ok();
}

Status ParseBatches(BenchOptions& o) {
  for (const auto& b : SplitList(o.batches)) {
    int v = 0;
    auto [ptr, ec] = std::from_chars(b.data(), b.data() + b.size(), v);
    if (ec != std::errc() || ptr != b.data() + b.size() || v < 1 || v > 4096) {
      return Bad("batch", b, "whole numbers from 1 to 4096");
    }
    o.batch_list.push_back(v);
  }
  if (o.batch_list.empty()) return Bad("batch", o.batches, "name at least one batch size");
  return Status::Ok();
}

Status CheckRanges(const BenchOptions& o) {
  if (o.threads < 1 || o.threads > 64) {
    return Bad("threads", std::to_string(o.threads), "1..64");
  }
  if (o.duration_s < 0 || o.duration_s > 600) {
    return Bad("duration_s", fmt::format("{}", o.duration_s), "0 (automatic) .. 600 seconds");
  }
  if (o.iterations < 0) return Bad("iterations", std::to_string(o.iterations), ">= 0");
  if (o.nodes < 0 || o.nodes > 16) return Bad("nodes", std::to_string(o.nodes), "0..16");
  if (o.verify_every < 1) return Bad("verify_every", std::to_string(o.verify_every), ">= 1");
  const HicacheOptions& h = o.hicache;
  if (h.engines < 1 || h.engines > 16) return Bad("engines", std::to_string(h.engines), "1..16");
  if (h.conversations < h.engines || h.conversations > 100000) {
    return Bad("conversations", std::to_string(h.conversations), "--engines .. 100000");
  }
  if (h.system_prompts < 1) return Bad("system_prompts", std::to_string(h.system_prompts), ">= 1");
  if (h.system_prompt_pages < 0 || h.system_prompt_pages > 4096) {
    return Bad("system_prompt_pages", std::to_string(h.system_prompt_pages), "0..4096");
  }
  if (h.max_turns < 4 || h.max_turns > 1000) {
    return Bad("max_turns", std::to_string(h.max_turns), "4..1000");
  }
  if (h.l2_pages < 0) return Bad("l2_pages", std::to_string(h.l2_pages), ">= 0");
  return Status::Ok();
}

}  // namespace

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kEmbedded:
      return "embedded";
    case Mode::kStandalone:
      return "standalone";
    case Mode::kRemote:
      return "remote";
  }
  return "?";
}

const char* LimitName(Mode m) { return m == Mode::kRemote ? "tcp" : "memcpy"; }

const char* WorkloadName(Workload w) {
  switch (w) {
    case Workload::kPut:
      return "put";
    case Workload::kGet:
      return "get";
    case Workload::kExists:
      return "exists";
    case Workload::kPrefix:
      return "prefix";
    case Workload::kHicache:
      return "hicache";
    case Workload::kMasterMemory:
      return "master_memory";
  }
  return "?";
}

bool BenchOptions::Has(Workload w) const {
  return std::find(workload_list.begin(), workload_list.end(), w) != workload_list.end();
}

bool BenchOptions::NeedsPool() const {
  return std::any_of(workload_list.begin(), workload_list.end(),
                     [](Workload w) { return w != Workload::kMasterMemory; });
}

void AddBenchFlags(CLI::App& cmd, BenchOptions& o) {
  cmd.add_option("--master", o.master, "Use this running pool (host:port) instead of starting one");
  rpc::AddSecurityFlags(cmd, o.security, /*server=*/true);
  cmd.add_option("--local_node", o.local_node,
                 "With --master: the local node (host:port) standalone mode attaches to");
  cmd.add_option("--mode", o.modes,
                 "embedded (own segment, memcpy), remote (nodes, TCP); default both, remote for "
                 "hicache alone");
  cmd.add_option("--workload", o.workloads, "put,get,exists,prefix,hicache,master_memory")
      ->capture_default_str();
  cmd.add_option("--page_size", o.page_sizes, "Page (object) sizes")->capture_default_str();
  cmd.add_option("--batch", o.batches, "Keys per batch call")->capture_default_str();
  cmd.add_option("--threads", o.threads, "Client threads")->capture_default_str();
  cmd.add_option("--duration_s", o.duration_s, "Seconds per row (0: 1 s; hicache 20 s)")
      ->capture_default_str();
  cmd.add_option("--iterations", o.iterations, "Batch calls per thread per row (0: by time)")
      ->capture_default_str();
  cmd.add_option("--nodes", o.nodes, "Storage nodes in remote mode (0: 1, or 2 for hicache)")
      ->capture_default_str();
  cmd.add_option("--segment_size", o.segment_size,
                 "DRAM per node and of the embedded segment (default 2GB; 1GB for hicache alone)");
  cmd.add_option("--working_set", o.working_set, "Distinct bytes a get row cycles through")
      ->capture_default_str();
  cmd.add_option("--verify_every", o.verify_every, "Check every Nth get call byte-exact")
      ->capture_default_str();
  cmd.add_flag("--no_limits", o.no_limits, "Skip the memcpy and TCP limit measurements");
  cmd.add_flag("!--no_first_fill", o.first_fill,
               "No put-first-fill row (puts into the fresh pool before the warm-up)");
  cmd.add_option("--node_flags", o.node_flags,
                 "More flags for the private pool's nodes, e.g. \"--prefault_in_background\"");
  cmd.add_option("--json", o.json_path, "Also write the rows to this JSON file");
  cmd.add_flag("!--no_progress", o.progress, "No in-place progress line");
  cmd.add_option("--peers", o.peers,
                 "Compare the remote put/get rows with: redis (a private redis-server), none")
      ->capture_default_str();
  HicacheOptions& h = o.hicache;
  cmd.add_option("--engines", h.engines, "hicache: simulated engines")->capture_default_str();
  cmd.add_flag("--engine_processes", h.processes,
               "hicache: run each engine as its own process (default: threads)");
  cmd.add_option("--conversations", h.conversations, "hicache: live conversations")
      ->capture_default_str();
  cmd.add_option("--system_prompts", h.system_prompts, "hicache: distinct system prompts")
      ->capture_default_str();
  cmd.add_option("--system_prompt_pages", h.system_prompt_pages, "hicache: pages per prompt")
      ->capture_default_str();
  cmd.add_option("--max_turns", h.max_turns, "hicache: turns per conversation at most")
      ->capture_default_str();
  cmd.add_option("--l2_pages", h.l2_pages, "hicache: pages each engine keeps in host memory")
      ->capture_default_str();
  cmd.add_option("--hicache_page_size", h.page_size, "hicache: page size")->capture_default_str();
  cmd.add_option("--master_objects", o.master_objects,
                 "master_memory: objects put into an in-process master core")
      ->capture_default_str();
}

void AddTcpPeerFlags(CLI::App& cmd, TcpPeerOptions& o) {
  cmd.add_option("--connect", o.connect, "127.0.0.1:PORT of the receiving bench")->required();
  cmd.add_option("--streams", o.streams, "connections to open, one sending thread each")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd.add_option("--page_bytes", o.page_bytes, "bytes per send, a multiple of 8")
      ->check(CLI::Range(uint64_t{8}, uint64_t{1} << 30))
      ->capture_default_str();
  cmd.add_option("--source_bytes", o.source_bytes, "memory each stream sends its pages from")
      ->check(CLI::Range(uint64_t{8}, uint64_t{64} << 30))
      ->capture_default_str();
}

Status ValidateBenchOptions(BenchOptions& o) {
  o.mode_list.clear();
  o.workload_list.clear();
  o.page_list.clear();
  o.batch_list.clear();
  KVPOOL_RETURN_IF_ERROR(ParseWorkloads(o));
  KVPOOL_RETURN_IF_ERROR(ParseModes(o));
  KVPOOL_RETURN_IF_ERROR(ParsePages(o));
  KVPOOL_RETURN_IF_ERROR(ParseBatches(o));
  KVPOOL_RETURN_IF_ERROR(CheckRanges(o));
  const bool only_hicache = o.workload_list.size() == 1 && o.Has(Workload::kHicache);
  const std::string segment = !o.segment_size.empty() ? o.segment_size
                              : only_hicache          ? "1GB"
                                                      : "2GB";
  auto seg = ParseSize(segment, "--segment_size");
  if (!seg.ok()) return seg.status();
  if (*seg < (16ULL << 20)) return Bad("segment_size", segment, "at least 16MB");
  o.segment_bytes = *seg;
  auto ws = ParseSize(o.working_set, "--working_set");
  if (!ws.ok()) return ws.status();
  if (*ws == 0) return Bad("working_set", o.working_set, "more than 0 bytes");
  o.working_set_bytes = *ws;
  auto hp = ParseSize(o.hicache.page_size, "--hicache_page_size");
  if (!hp.ok()) return hp.status();
  if (*hp < 8 || *hp % 8 != 0 || *hp > (64ULL << 20)) {
    return Bad("hicache_page_size", o.hicache.page_size, "a multiple of 8 bytes up to 64 MiB");
  }
  o.hicache.page_bytes = *hp;
  o.node_count = o.nodes > 0 ? o.nodes : (o.Has(Workload::kHicache) ? 2 : 1);
  if (o.master_objects < 1 || o.master_objects > 100'000'000) {
    return Bad("master_objects", std::to_string(o.master_objects), "1 .. 100000000");
  }
  if (o.peers != "redis" && o.peers != "none") return Bad("peers", o.peers, "use redis or none");
  o.redis_peer = o.peers == "redis";
  return Status::Ok();
}

}  // namespace kvpool::tools::bench
