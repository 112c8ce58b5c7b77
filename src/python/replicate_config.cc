#include "python/replicate_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace kvpool::python {

int64_t ReplicaNumFromPy(py::handle value) {
  // Any integer (numpy's too, through __index__), but not a bool.
  PyObject* index = py::isinstance<py::bool_>(value) ? nullptr : PyNumber_Index(value.ptr());
  if (index == nullptr) {
    PyErr_Clear();
    throw py::type_error(fmt::format("ReplicateConfig.replica_num must be an int, not {}",
                                     std::string(py::str(py::type::of(value).attr("__name__")))));
  }
  const auto n = py::reinterpret_steal<py::int_>(index);
  if (n < py::int_(1) || n > py::int_(kMaxReplicaNum)) {
    throw py::value_error(fmt::format(
        "ReplicateConfig.replica_num={} is outside 1..{} (kvpool keeps at most {} replicas of "
        "an object, each on its own segment)",
        std::string(py::repr(n)), kMaxReplicaNum, kMaxReplicaNum));
  }
  return n.cast<int64_t>();
}

Result<ReplicateConfig> PyReplicateConfig::ToCore() const {
  if (replica_num < 1 || replica_num > static_cast<int64_t>(kMaxReplicaNum)) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("ReplicateConfig.replica_num={} is outside 1..{}", replica_num,
                              kMaxReplicaNum));
  }
  if (soft_pin_ttl_ms.has_value() && *soft_pin_ttl_ms < 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("ReplicateConfig.soft_pin_ttl_ms={} is negative", *soft_pin_ttl_ms));
  }
  ReplicateConfig c;
  c.replica_num = static_cast<size_t>(replica_num);
  switch (soft_pin_action) {
    case SoftPinAction::ENABLE:
      c.with_soft_pin = true;
      break;
    case SoftPinAction::DISABLE:
      c.with_soft_pin = false;
      break;
    case SoftPinAction::PRESERVE:
      c.with_soft_pin = with_soft_pin;
      break;
  }
  c.with_hard_pin = with_hard_pin;
  if (!preferred_segment.empty()) c.preferred_segments.push_back(preferred_segment);
  for (const auto& s : preferred_segments) {
    if (s != preferred_segment) c.preferred_segments.push_back(s);
  }
  c.prefer_alloc_in_same_node = prefer_alloc_in_same_node;
  c.group_ids = group_ids;
  c.soft_pin_ttl_ms = soft_pin_ttl_ms ? static_cast<uint64_t>(*soft_pin_ttl_ms) : 0;
  return c;
}

std::string PyReplicateConfig::Repr() const {
  static constexpr const char* kActions[] = {"PRESERVE", "ENABLE", "DISABLE"};
  return fmt::format(
      "ReplicateConfig(replica_num={}, with_soft_pin={}, with_hard_pin={}, "
      "preferred_segments={}, preferred_segment='{}', prefer_alloc_in_same_node={}, "
      "group_ids={}, soft_pin_action=SoftPinAction.{}, soft_pin_ttl_ms={})",
      replica_num, with_soft_pin ? "True" : "False", with_hard_pin ? "True" : "False",
      preferred_segments, preferred_segment, prefer_alloc_in_same_node ? "True" : "False",
      group_ids, kActions[static_cast<int>(soft_pin_action)],
      soft_pin_ttl_ms ? std::to_string(*soft_pin_ttl_ms) : std::string("None"));
}

void BindReplicateConfig(py::module_& m) {
  py::enum_<SoftPinAction>(m, "SoftPinAction",
                           "Soft-pin control of newer Mooncake releases: PRESERVE keeps what "
                           "with_soft_pin says, ENABLE / DISABLE override it.")
      .value("PRESERVE", SoftPinAction::PRESERVE)
      .value("ENABLE", SoftPinAction::ENABLE)
      .value("DISABLE", SoftPinAction::DISABLE);

  using C = PyReplicateConfig;
  py::class_<C>(m, "ReplicateConfig",
                "How to place the replicas of objects being put (Mooncake's field set).")
      .def(py::init<>())
      .def(py::init([](py::object replica_num, bool with_soft_pin, bool with_hard_pin,
                       std::vector<std::string> preferred_segments, std::string preferred_segment,
                       bool prefer_alloc_in_same_node, std::vector<std::string> group_ids,
                       SoftPinAction soft_pin_action, std::optional<int64_t> soft_pin_ttl_ms) {
             return C{ReplicaNumFromPy(replica_num),
                      with_soft_pin,
                      with_hard_pin,
                      std::move(preferred_segments),
                      std::move(preferred_segment),
                      prefer_alloc_in_same_node,
                      std::move(group_ids),
                      soft_pin_action,
                      soft_pin_ttl_ms};
           }),
           py::kw_only(), py::arg("replica_num") = py::int_(1), py::arg("with_soft_pin") = false,
           py::arg("with_hard_pin") = false,
           py::arg("preferred_segments") = std::vector<std::string>{},
           py::arg("preferred_segment") = "", py::arg("prefer_alloc_in_same_node") = false,
           py::arg("group_ids") = std::vector<std::string>{},
           py::arg("soft_pin_action") = SoftPinAction::PRESERVE,
           py::arg("soft_pin_ttl_ms") = py::none())
      .def_property(
          "replica_num", [](const C& c) { return c.replica_num; },
          [](C& c, py::object v) { c.replica_num = ReplicaNumFromPy(v); },
          "Replicas on distinct segments, 1..16 (ValueError outside; TypeError for a non-int).")
      .def_readwrite("with_soft_pin", &C::with_soft_pin, "Evicted last (older spelling).")
      .def_readwrite("with_hard_pin", &C::with_hard_pin, "Never evicted.")
      .def_readwrite("preferred_segments", &C::preferred_segments,
                     "Segment names (\"host:port\") tried first, in order.")
      .def_readwrite("preferred_segment", &C::preferred_segment,
                     "Deprecated single preferred segment; tried before preferred_segments.")
      .def_readwrite("prefer_alloc_in_same_node", &C::prefer_alloc_in_same_node)
      .def_readwrite("group_ids", &C::group_ids,
                     "Accepted for compatibility; kvpool does not group objects yet.")
      .def_readwrite("soft_pin_action", &C::soft_pin_action)
      .def_readwrite("soft_pin_ttl_ms", &C::soft_pin_ttl_ms,
                     "Accepted for compatibility; kvpool's soft pins do not expire.")
      .def("__repr__", &C::Repr);
}

}  // namespace kvpool::python
