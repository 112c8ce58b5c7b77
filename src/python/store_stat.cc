// stat(): the pool as the master sees it, as a dict (docs/python.md), with the nodes' disk tiers.
#include "python/errors.h"
#include "python/store.h"

namespace py = pybind11;

namespace kvpool::python {

py::dict Store::Stat() {
  auto c = client();
  if (!c.ok()) ThrowStatus(c.status());
  Result<PoolStat> r = Status();
  {
    py::gil_scoped_release nogil;
    r = (*c)->Stat();
  }
  if (!r.ok()) ThrowStatus(r.status());
  py::dict d;
  d["capacity"] = r->capacity;
  d["used"] = r->used;
  d["object_count"] = r->object_count;
  d["client_count"] = r->client_count;
  d["evicted_total"] = r->evicted_total;
  d["disk_capacity"] = r->disk_capacity;  // the nodes' disk tiers (0: none)
  d["disk_used"] = r->disk_used;
  d["disk_replicas"] = r->disk_replicas;
  py::list segments;
  for (const auto& s : r->segments) {
    py::dict seg;
    seg["name"] = s.name;
    seg["endpoint"] = s.endpoint;
    seg["size"] = s.size;
    seg["used"] = s.used;
    seg["object_count"] = s.object_count;
    segments.append(seg);
  }
  d["segments"] = segments;
  return d;
}

}  // namespace kvpool::python
