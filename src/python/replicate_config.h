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
  std::vector<std::string> group_ids;
  SoftPinAction soft_pin_action = SoftPinAction::PRESERVE;
  std::optional<int64_t> soft_pin_ttl_ms;

  // The client's config. Errors: INVALID_PARAMS (replica_num < 1, soft_pin_ttl_ms < 0).
  Result<ReplicateConfig> ToCore() const;
  std::string Repr() const;
};

void BindReplicateConfig(pybind11::module_& m);

}  // namespace kvpool::python
