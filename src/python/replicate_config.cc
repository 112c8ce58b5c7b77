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
  if (nof_replica_num > 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("ReplicateConfig.nof_replica_num={}: kvpool has no NVMe-oF tier",
                              nof_replica_num));
  }
  // As Mooncake's master: a DFS replica count is 0 or 1; asking for one where no DFS backend is
  // configured (kvpool never has one) is DFS_SERVICE_UNAVAILABLE.
  if (dfs_replica_num > 1) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("ReplicateConfig.dfs_replica_num={} is outside 0..1", dfs_replica_num));
  }
  if (dfs_replica_num == 1) {
    return Status(ErrorCode::DFS_SERVICE_UNAVAILABLE,
                  "ReplicateConfig.dfs_replica_num=1: kvpool has no DFS backend");
  }
  const bool pin = soft_pin_action == SoftPinAction::ENABLE ||
                   (soft_pin_action == SoftPinAction::PRESERVE && with_soft_pin);
  if (soft_pin_ttl_ms.has_value() && !pin) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("ReplicateConfig.soft_pin_ttl_ms={} needs soft_pin_action=ENABLE",
                              *soft_pin_ttl_ms));
  }
  if (soft_pin_ttl_ms.has_value() && *soft_pin_ttl_ms > kMaxSoftPinTtlMs) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("ReplicateConfig.soft_pin_ttl_ms={} is above the maximum {} (24 h)",
                              *soft_pin_ttl_ms, kMaxSoftPinTtlMs));
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
  // PRESERVE without the older with_soft_pin: an upsert keeps the replaced object's soft pin.
  c.keep_soft_pin_on_upsert = soft_pin_action == SoftPinAction::PRESERVE && !with_soft_pin;
  c.with_hard_pin = with_hard_pin;
  if (!preferred_segment.empty()) c.preferred_segments.push_back(preferred_segment);
  for (const auto& s : preferred_segments) {
    if (s != preferred_segment) c.preferred_segments.push_back(s);
  }
  c.prefer_alloc_in_same_node = prefer_alloc_in_same_node;
  if (group_ids.has_value()) c.group_ids = *group_ids;
  c.soft_pin_ttl_ms = soft_pin_ttl_ms.value_or(0);
  return c;
}

std::string PyReplicateConfig::Repr() const {
  static constexpr const char* kActions[] = {"PRESERVE", "ENABLE", "DISABLE"};
  return fmt::format(
      "ReplicateConfig(replica_num={}, with_soft_pin={}, with_hard_pin={}, "
      "preferred_segments={}, preferred_segment='{}', prefer_alloc_in_same_node={}, "
      "group_ids={}, soft_pin_action=SoftPinAction.{}, soft_pin_ttl_ms={}, nof_replica_num={}, "
      "dfs_replica_num={}, preferred_nof_segments={}, data_type={})",
      replica_num, with_soft_pin ? "True" : "False", with_hard_pin ? "True" : "False",
      preferred_segments, preferred_segment, prefer_alloc_in_same_node ? "True" : "False",
      group_ids ? fmt::format("{}", *group_ids) : std::string("None"),
      kActions[static_cast<int>(soft_pin_action)],
      soft_pin_ttl_ms ? std::to_string(*soft_pin_ttl_ms) : std::string("None"), nof_replica_num,
      dfs_replica_num, preferred_nof_segments, static_cast<int>(data_type));
}

void BindReplicateConfig(py::module_& m) {
  py::enum_<SoftPinAction>(m, "SoftPinAction",
                           "Soft-pin control of newer Mooncake releases: PRESERVE keeps what "
                           "with_soft_pin says, ENABLE / DISABLE override it.")
      .value("PRESERVE", SoftPinAction::PRESERVE)
      .value("ENABLE", SoftPinAction::ENABLE)
      .value("DISABLE", SoftPinAction::DISABLE);
  py::enum_<ObjectDataType>(m, "ObjectDataType", "Mooncake's object classification tag.")
      .value("UNKNOWN", ObjectDataType::UNKNOWN)
      .value("KVCACHE", ObjectDataType::KVCACHE)
      .value("TENSOR", ObjectDataType::TENSOR)
      .value("WEIGHT", ObjectDataType::WEIGHT)
      .value("SAMPLE", ObjectDataType::SAMPLE)
      .value("ACTIVATION", ObjectDataType::ACTIVATION)
      .value("GRADIENT", ObjectDataType::GRADIENT)
      .value("OPTIMIZER_STATE", ObjectDataType::OPTIMIZER_STATE)
      .value("METADATA", ObjectDataType::METADATA)
      .value("GENERAL", ObjectDataType::GENERAL);

  using C = PyReplicateConfig;
  py::class_<C>(m, "ReplicateConfig",
                "How to place the replicas of objects being put (Mooncake's field set).")
      .def(py::init<>())
      .def(py::init([](py::object replica_num, bool with_soft_pin, bool with_hard_pin,
                       std::vector<std::string> preferred_segments, std::string preferred_segment,
                       bool prefer_alloc_in_same_node,
                       std::optional<std::vector<std::string>> group_ids,
                       SoftPinAction soft_pin_action, std::optional<uint64_t> soft_pin_ttl_ms) {
             C c;
             c.replica_num = ReplicaNumFromPy(replica_num);
             c.with_soft_pin = with_soft_pin;
             c.with_hard_pin = with_hard_pin;
             c.preferred_segments = std::move(preferred_segments);
             c.preferred_segment = std::move(preferred_segment);
             c.prefer_alloc_in_same_node = prefer_alloc_in_same_node;
             c.group_ids = std::move(group_ids);
             c.soft_pin_action = soft_pin_action;
             c.soft_pin_ttl_ms = soft_pin_ttl_ms;
             return c;
           }),
           py::kw_only(), py::arg("replica_num") = py::int_(1), py::arg("with_soft_pin") = false,
           py::arg("with_hard_pin") = false,
           py::arg("preferred_segments") = std::vector<std::string>{},
           py::arg("preferred_segment") = "", py::arg("prefer_alloc_in_same_node") = false,
           py::arg("group_ids") = py::none(), py::arg("soft_pin_action") = SoftPinAction::PRESERVE,
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
                     "None or one group id per key of a batch: objects of a group are evicted "
                     "together and a read lease on one holds them all.")
      .def_readwrite("soft_pin_action", &C::soft_pin_action)
      .def_readwrite("soft_pin_ttl_ms", &C::soft_pin_ttl_ms,
                     "None, or with ENABLE: the soft pin lapses this many ms after the put "
                     "(at most 24 h; an int >= 0, else TypeError).")
      .def_readwrite("nof_replica_num", &C::nof_replica_num,
                     "NVMe-oF replicas: kvpool has no such tier, > 0 fails the put (-600).")
      .def_readwrite("dfs_replica_num", &C::dfs_replica_num,
                     "DFS replicas: kvpool has no such tier, > 0 fails the put (-600).")
      .def_readwrite("preferred_nof_segments", &C::preferred_nof_segments)
      .def_readwrite("data_type", &C::data_type, "An ObjectDataType tag; kept, not acted on.")
      .def("__str__", &C::Repr)
      .def("__repr__", &C::Repr);
}

}  // namespace kvpool::python
