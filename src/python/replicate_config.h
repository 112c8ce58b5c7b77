// ReplicateConfig as Python sees it: Mooncake's field set, both soft-pin generations.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvpool/client.h"

namespace kvpool::python {

// Newer Mooncake releases' soft-pin control. PRESERVE defers to `with_soft_pin` (the older
// spelling), ENABLE / DISABLE override it.
enum class SoftPinAction : int { PRESERVE = 0, ENABLE = 1, DISABLE = 2 };

// Mooncake's classification tag of an object (ReplicateConfig.data_type); kept, not acted on.
enum class ObjectDataType : int {
  UNKNOWN = 0,
  KVCACHE = 1,
  TENSOR = 2,
  WEIGHT = 3,
  SAMPLE = 4,
  ACTIVATION = 5,
  GRADIENT = 6,
  OPTIMIZER_STATE = 7,
  METADATA = 8,
  GENERAL = 9,
};

// The longest soft_pin_ttl_ms accepted with ENABLE (Mooncake master's default maximum, 24 h).
inline constexpr uint64_t kMaxSoftPinTtlMs = 24ull * 3600 * 1000;

// replica_num from Python: an int in 1..kMaxReplicaNum (16). Python ints are unbounded, so a
// value is checked before it is narrowed (2**40 must not wrap to 0 and pass). Raises ValueError
// naming the value and the range; TypeError for a non-int (bool included).
int64_t ReplicaNumFromPy(pybind11::handle value);

struct PyReplicateConfig {
  int64_t replica_num = 1;
  bool with_soft_pin = false;
  bool with_hard_pin = false;
  std::vector<std::string> preferred_segments;
  std::string preferred_segment;  // deprecated single form; tried before preferred_segments
  bool prefer_alloc_in_same_node = false;
  // Accepted for compatibility, not honoured yet: kvpool has no object groups and soft pins
  // without an expiry. Documented in docs/python.md.
  std::optional<std::vector<std::string>> group_ids;  // None: ungrouped
  SoftPinAction soft_pin_action = SoftPinAction::PRESERVE;
  std::optional<uint64_t> soft_pin_ttl_ms;  // uint64 as Mooncake's: -1 is a TypeError
  // Mooncake's other tiers: kvpool has neither an NVMe-oF nor a DFS tier, so a put asking for
  // one is refused (INVALID_PARAMS naming the field) rather than silently placed in memory.
  uint64_t nof_replica_num = 0;
  uint64_t dfs_replica_num = 0;
  std::vector<std::string> preferred_nof_segments;
  ObjectDataType data_type = ObjectDataType::UNKNOWN;

  // The client's config. Errors: INVALID_PARAMS (replica_num outside 1..16, nof_replica_num
  // > 0, dfs_replica_num > 1, soft_pin_ttl_ms without ENABLE (or with_soft_pin), or above 24 h);
  // DFS_SERVICE_UNAVAILABLE (dfs_replica_num 1: kvpool has no DFS backend, as Mooncake's master
  // without one).
  Result<ReplicateConfig> ToCore() const;
  std::string Repr() const;
};

void BindReplicateConfig(pybind11::module_& m);

}  // namespace kvpool::python
