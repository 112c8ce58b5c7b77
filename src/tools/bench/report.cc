#include "tools/bench/report.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/units.h"

namespace kvpool::tools::bench {
namespace {

std::string PageText(uint64_t bytes) {
  if (bytes == 0) return "-";
  if (bytes % (1ULL << 20) == 0) return fmt::format("{}MiB", bytes >> 20);
  if (bytes % (1ULL << 10) == 0) return fmt::format("{}KiB", bytes >> 10);
  return fmt::format("{}B", bytes);
}

nlohmann::json LimitsJson(const std::map<uint64_t, LimitFigure>& m) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [page, f] : m) {
    out.push_back({{"page_bytes", page},
                   {"gbps", f.gbps},
                   {"cpu_s_per_gb", f.cpu_s_per_gb},
                   {"streams", f.streams}});
  }
  return out;
}

}  // namespace

void FinishRow(Row& row, const LimitFigure* limit, const std::string& limit_name) {
  if (row.busy_s > 0) {
    row.gbps = static_cast<double>(row.bytes) / row.busy_s / 1e9;
    row.keys_per_s = static_cast<double>(row.keys) / row.busy_s;
  }
  if (limit != nullptr && limit->gbps > 0 && row.bytes > 0) {
    row.limit_name = limit_name;
    row.limit_gbps = limit->gbps;
    row.ratio = row.gbps / limit->gbps;
  }
  if (row.bytes > 0) row.cpu_s_per_gb = row.cpu_s / (static_cast<double>(row.bytes) / 1e9);
}

std::string TableHeader() {
  return fmt::format("{:<15} {:<10} {:>7} {:>5} {:>3} {:>7} {:>10} {:>9} {:>9} {:>9} {:>14} {:>8}",
                     "workload", "mode", "page", "batch", "thr", "GB/s", "keys/s", "p50 us",
                     "p99 us", "p999 us", "x limit", "cpu-s/GB");
}

std::string TableLine(const Row& r) {
  std::string ratio = r.limit_gbps > 0 ? fmt::format("{:.2f} {}", r.ratio, r.limit_name) : "-";
  std::string gbps = r.bytes > 0 ? fmt::format("{:.2f}", r.gbps) : "-";
  std::string cpu = r.bytes > 0 && r.cpu_s > 0 ? fmt::format("{:.2f}", r.cpu_s_per_gb) : "-";
  std::string line = fmt::format(
      "{:<15} {:<10} {:>7} {:>5} {:>3} {:>7} {:>10.0f} {:>9.1f} {:>9.1f} {:>9.1f} {:>14} {:>8}",
      r.workload, r.mode, PageText(r.page_bytes), r.batch, r.threads, gbps, r.keys_per_s, r.p50_us,
      r.p99_us, r.p999_us, ratio, cpu);
  if (!r.note.empty()) line += "  " + r.note;
  return line;
}

Status WriteJson(const std::string& path, const Limits& limits, const std::vector<Row>& rows,
                 const std::string& machine) {
  nlohmann::json doc;
  doc["machine"] = machine;
  doc["limits"] = {{"memcpy", LimitsJson(limits.memcpy_by_page)},
                   {"tcp", LimitsJson(limits.tcp_by_page)}};
  doc["rows"] = nlohmann::json::array();
  for (const auto& r : rows) {
    doc["rows"].push_back({{"workload", r.workload},
                           {"mode", r.mode},
                           {"page_bytes", r.page_bytes},
                           {"batch", r.batch},
                           {"threads", r.threads},
                           {"calls", r.calls},
                           {"keys", r.keys},
                           {"bytes", r.bytes},
                           {"busy_s", r.busy_s},
                           {"gbps", r.gbps},
                           {"keys_per_s", r.keys_per_s},
                           {"p50_us", r.p50_us},
                           {"p99_us", r.p99_us},
                           {"p999_us", r.p999_us},
                           {"limit", r.limit_name},
                           {"limit_gbps", r.limit_gbps},
                           {"ratio", r.ratio},
                           {"cpu_s", r.cpu_s},
                           {"cpu_s_per_gb", r.cpu_s_per_gb},
                           {"pool_cpu_s", r.pool_cpu_s},
                           {"verified_keys", r.verified},
                           {"vs_redis", r.vs_redis},
                           {"note", r.note}});
  }
  std::ofstream out(path, std::ios::trunc);
  if (!out) {
    return Status(ErrorCode::FILE_OPEN_FAIL, fmt::format("--json: cannot open '{}'", path));
  }
  out << doc.dump(2) << "\n";
  out.close();
  if (!out)
    return Status(ErrorCode::FILE_WRITE_FAIL, fmt::format("--json: cannot write '{}'", path));
  return Status::Ok();
}

}  // namespace kvpool::tools::bench
