// What `kvpool top` shows: a snapshot of the master's /metrics, and one screen rendered from two
// snapshots (rates are the counters' deltas over the time between them).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kvpool/status.h"
#include "tools/prom_text.h"

namespace kvpool::tools {

struct MethodStats {
  double requests = 0, keys = 0, found = 0, errors = 0;
  double duration_sum = 0, duration_count = 0;
  std::vector<std::pair<double, double>> buckets;  // (le seconds, cumulative count), ascending
};

struct SegmentRow {
  std::string name;
  double capacity = 0, used = 0, objects = 0;
};

struct TopSnapshot {
  std::map<std::string, MethodStats> methods;  // by `method` label
  std::vector<SegmentRow> segments;            // by name
  std::map<std::string, double> errors;        // by `code` label, summed over methods
  double capacity = 0, used = 0, objects = 0, pending = 0, clients = 0, evicted = 0;
  double leases = 0, leased_bytes = 0;
  std::map<std::string, double> refused;  // put items refused, by `reason` label
  // The nodes' disk tiers (all 0 without one).
  double disk_capacity = 0, disk_used = 0, disk_replicas = 0, demoted = 0, promoted = 0;
};

// OK when `samples` are a kvpool master's (kvpool_master_info is there). Else INVALID_PARAMS
// naming `where` and what answered instead: a kvpool node's /metrics (kvpool_node_info, with
// its segment) or something that is not kvpool — top would otherwise show an empty pool.
Status CheckMasterMetrics(const std::vector<PromSample>& samples, const std::string& where);

// Reads the kvpool_master_* samples that top shows (others are ignored).
TopSnapshot SnapshotOf(const std::vector<PromSample>& samples);

// One screen. `prev` (may be null: the first screen has no rates yet) was taken `elapsed_s`
// before `now`. `title` heads the screen (address and time). No terminal control codes.
std::string RenderTop(const std::string& title, const TopSnapshot& now, const TopSnapshot* prev,
                      double elapsed_s);

}  // namespace kvpool::tools
