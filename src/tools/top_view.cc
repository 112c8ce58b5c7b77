#include "tools/top_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/units.h"

namespace kvpool::tools {
namespace {

constexpr std::string_view kPrefix = "kvpool_master_";

// Values come from whatever answered on the port: NaN, negative, +Inf or past 2^64 must not
// reach the integer conversion (undefined behaviour).
std::string Bytes(double v) {
  if (!(v > 0)) return FormatSize(0);
  if (v >= 1.8e19) return ">16 EiB";
  return FormatSize(static_cast<uint64_t>(v));
}

std::string Percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : std::string("-");
}

SegmentRow& Segment(TopSnapshot& s, const std::string& name) {
  for (SegmentRow& r : s.segments) {
    if (r.name == name) return r;
  }
  s.segments.push_back(SegmentRow{name});
  return s.segments.back();
}

void Method(TopSnapshot& s, std::string_view what, const PromSample& p) {
  MethodStats& m = s.methods[p.label("method")];
  if (what == "requests_total") m.requests = p.value;
  if (what == "request_keys_total") m.keys = p.value;
  if (what == "found_keys_total") m.found = p.value;
  if (what == "request_duration_seconds_sum") m.duration_sum = p.value;
  if (what == "request_duration_seconds_count") m.duration_count = p.value;
  if (what == "request_duration_seconds_bucket") {
    double le = p.label("le") == "+Inf" ? INFINITY : std::atof(p.label("le").c_str());
    m.buckets.emplace_back(le, p.value);
  }
  if (what == "errors_total") {
    m.errors += p.value;
    s.errors[p.label("code")] += p.value;
  }
}

// Upper bound of the bucket holding quantile `q` of the observations between two snapshots.
double Quantile(const MethodStats& now, const MethodStats* prev, double q) {
  double total = now.duration_count - (prev ? prev->duration_count : 0);
  if (total <= 0) return NAN;
  for (size_t i = 0; i < now.buckets.size(); ++i) {
    double before = prev && i < prev->buckets.size() ? prev->buckets[i].second : 0;
    if (now.buckets[i].second - before >= q * total) return now.buckets[i].first;
  }
  return INFINITY;
}

std::string Millis(double seconds) {
  if (std::isnan(seconds)) return "-";
  if (std::isinf(seconds)) return ">10000";
  return fmt::format("{:.3f}", seconds * 1e3);
}

std::string Rate(double now, double before, double elapsed_s) {
  if (elapsed_s <= 0) return "-";
  return fmt::format("{:.1f}", std::max(0.0, now - before) / elapsed_s);
}

}  // namespace

Status CheckMasterMetrics(const std::vector<PromSample>& samples, const std::string& where) {
  for (const PromSample& p : samples) {
    if (p.name == "kvpool_master_info") return Status::Ok();
  }
  for (const PromSample& p : samples) {
    if (p.name == "kvpool_node_info") {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("http://{}/metrics is kvpool node {}'s, not the master's: kvpool "
                                "top shows the pool from the master's HTTP port (its "
                                "--metrics_port, default 9003); a node's own numbers are at "
                                "http://{}/status",
                                where, p.label("segment"), where));
    }
  }
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("http://{}/metrics has no kvpool_master_info ({} samples): not a "
                            "kvpool master's HTTP port (the master's --metrics_port, default 9003)",
                            where, samples.size()));
}

TopSnapshot SnapshotOf(const std::vector<PromSample>& samples) {
  TopSnapshot s;
  for (const PromSample& p : samples) {
    std::string_view name = p.name;
    if (!name.starts_with(kPrefix)) continue;
    name.remove_prefix(kPrefix.size());
    if (name == "segment_capacity_bytes") Segment(s, p.label("segment")).capacity = p.value;
    if (name == "segment_used_bytes") Segment(s, p.label("segment")).used = p.value;
    if (name == "segment_objects") Segment(s, p.label("segment")).objects = p.value;
    if (name == "capacity_bytes") s.capacity = p.value;
    if (name == "used_bytes") s.used = p.value;
    if (name == "objects") s.objects = p.value;
    if (name == "pending_objects") s.pending = p.value;
    if (name == "clients_alive") s.clients = p.value;
    if (name == "evicted_objects_total") s.evicted = p.value;
    if (name == "leases_held") s.leases = p.value;
    if (name == "leased_bytes") s.leased_bytes = p.value;
    if (name == "put_refused_total") s.refused[std::string(p.label("reason"))] = p.value;
    if (name == "tier_capacity_bytes" && p.label("tier") == "disk") s.disk_capacity = p.value;
    if (name == "tier_used_bytes" && p.label("tier") == "disk") s.disk_used = p.value;
    if (name == "disk_replicas") s.disk_replicas = p.value;
    if (name == "demoted_objects_total") s.demoted = p.value;
    if (name == "promoted_objects_total") s.promoted = p.value;
    if (p.labels.count("method") != 0) Method(s, name, p);
  }
  std::sort(s.segments.begin(), s.segments.end(),
            [](const SegmentRow& a, const SegmentRow& b) { return a.name < b.name; });
  return s;
}

std::string RenderTop(const std::string& title, const TopSnapshot& now, const TopSnapshot* prev,
                      double elapsed_s) {
  std::string out = title + "\n";
  fmt::format_to(std::back_inserter(out),
                 "pool: {} segments, capacity {}, used {} ({}), {:.0f} objects ({:.0f} pending), "
                 "{:.0f} clients, {:.0f} evicted\n\n",
                 now.segments.size(), Bytes(now.capacity), Bytes(now.used),
                 Percent(now.used, now.capacity), now.objects, now.pending, now.clients,
                 now.evicted);
  if (now.disk_capacity > 0) {
    // Demoted: evicted from DRAM, kept on disk; promoted: copied back to DRAM after disk hits.
    const bool rates = prev != nullptr;
    fmt::format_to(std::back_inserter(out),
                   "disk tiers: capacity {}, used {} ({}), {:.0f} replicas; demoted {}, "
                   "promoted {}\n\n",
                   Bytes(now.disk_capacity), Bytes(now.disk_used),
                   Percent(now.disk_used, now.disk_capacity), now.disk_replicas,
                   rates ? Rate(now.demoted, prev->demoted, elapsed_s) + "/s"
                         : fmt::format("{:.0f}", now.demoted),
                   rates ? Rate(now.promoted, prev->promoted, elapsed_s) + "/s"
                         : fmt::format("{:.0f}", now.promoted));
  }
  if (!now.refused.empty() || now.leases > 0) {
    // Back-pressure: what holds the pool, and the puts it refused (per second from the second
    // screen on, totals on the first).
    std::string refused;
    for (const auto& [reason, total] : now.refused) {
      const double before =
          prev != nullptr && prev->refused.count(reason) ? prev->refused.at(reason) : 0;
      refused += fmt::format(
          " {} {}", reason,
          prev != nullptr ? Rate(total, before, elapsed_s) + "/s" : fmt::format("{:.0f}", total));
    }
    fmt::format_to(std::back_inserter(out), "leases: {:.0f} held ({}); puts refused:{}\n\n",
                   now.leases, Bytes(now.leased_bytes), refused.empty() ? " none" : refused);
  }
  fmt::format_to(std::back_inserter(out), "{:<32} {:>12} {:>12} {:>7} {:>10}\n", "SEGMENT",
                 "CAPACITY", "USED", "USE%", "OBJECTS");
  for (const SegmentRow& r : now.segments) {
    fmt::format_to(std::back_inserter(out), "{:<32} {:>12} {:>12} {:>7} {:>10.0f}\n", r.name,
                   Bytes(r.capacity), Bytes(r.used), Percent(r.used, r.capacity), r.objects);
  }
  const double dt = prev != nullptr ? elapsed_s : 0;
  fmt::format_to(std::back_inserter(out), "\n{:<18} {:>10} {:>10} {:>7} {:>9} {:>9} {:>9}\n",
                 "METHOD", "REQ/S", "KEYS/S", "FOUND%", "ERR/S", "AVG_MS", "P99_MS");
  for (const auto& [name, m] : now.methods) {
    if (m.requests == 0) continue;
    const MethodStats* p = nullptr;
    if (prev != nullptr) {
      auto it = prev->methods.find(name);
      if (it != prev->methods.end()) p = &it->second;
    }
    MethodStats zero;
    const MethodStats& b = p != nullptr ? *p : zero;
    double dcount = m.duration_count - b.duration_count;
    double avg = dcount > 0 ? (m.duration_sum - b.duration_sum) / dcount : NAN;
    double dkeys = m.keys - b.keys;
    bool has_found = name == "get_replica_list" || name == "exists" || name == "exists_prefix";
    std::string found = has_found && dkeys > 0 && prev != nullptr
                            ? Percent(m.found - b.found, dkeys)
                            : std::string("-");
    fmt::format_to(std::back_inserter(out), "{:<18} {:>10} {:>10} {:>7} {:>9} {:>9} {:>9}\n", name,
                   Rate(m.requests, b.requests, dt), Rate(m.keys, b.keys, dt), found,
                   Rate(m.errors, b.errors, dt), prev != nullptr ? Millis(avg) : "-",
                   prev != nullptr ? Millis(Quantile(m, p, 0.99)) : "-");
  }
  if (prev == nullptr) out += "(rates from the next refresh on)\n";
  std::string errors;
  for (const auto& [code, n] : now.errors) {
    double before = 0;
    if (prev != nullptr) {
      auto it = prev->errors.find(code);
      if (it != prev->errors.end()) before = it->second;
    }
    if (prev != nullptr && n > before) {
      errors += fmt::format(" {} {}/s", code, Rate(n, before, dt));
    }
  }
  if (!errors.empty()) out += "\nerrors:" + errors + "\n";
  return out;
}

}  // namespace kvpool::tools
