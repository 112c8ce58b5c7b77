// The extension module kvpool._kvpool. The package kvpool (python/kvpool/) re-exports it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>

#include "client/client_config.h"
#include "common/env.h"
#include "common/log.h"
#include "common/units.h"
#include "python/errors.h"
#include "python/host_allocator.h"
#include "python/replicate_config.h"
#include "python/standalone.h"
#include "python/store.h"

namespace py = pybind11;

PYBIND11_MODULE(_kvpool, m) {
  m.doc() = "kvpool: a distributed KV-cache store for LLM inference (C++ binding)";
  // The library logs through spdlog; quiet by default inside an engine, KVPOOL_LOG_LEVEL to tune.
  std::string level = kvpool::GetEnv("KVPOOL_LOG_LEVEL").value_or("warn");
  if (!kvpool::InitLogging(level, "python").ok()) {
    (void)kvpool::InitLogging("warn", "python");
  }

  kvpool::python::BindErrors(m);
  kvpool::python::BindReplicateConfig(m);
  kvpool::python::BindHostAllocator(m);
  kvpool::python::BindStore(m);

  m.def(
      "client_options",
      [] {
        py::list out;
        for (const kvpool::ClientOptionDescriptor& d : kvpool::ClientOptionTable()) {
          py::dict row;
          row["name"] = std::string(d.name);
          row["aliases"] = std::vector<std::string>(d.aliases.begin(), d.aliases.end());
          row["kind"] = std::string(kvpool::OptionKindName(d.kind));
          row["env"] = std::vector<std::string>(d.env.begin(), d.env.end());
          row["default"] = kvpool::ClientOptionDefault(d);
          row["doc"] = std::string(d.doc);
          out.append(row);
        }
        return out;
      },
      "The client option table (client/client_config.h): one dict per ClientOptions field with "
      "name, aliases, kind, env, default (as text) and doc.");
  m.def(
      "parse_size",
      [](const std::string& text, const std::string& what) {
        auto r = kvpool::ParseSize(text, what);
        if (!r.ok()) throw py::value_error(r.status().message());
        return r.value();
      },
      py::arg("text"), py::arg("what") = "size",
      "Bytes in a size like \"4gb\", \"512 MiB\" or \"1048576\" (units are powers of 1024). "
      "Raises ValueError naming `what` for negatives, percentages and unknown units.");
  m.attr("HAS_STANDALONE") = py::bool_(KVPOOL_PY_HAS_STANDALONE != 0);
  m.attr("__version__") = KVPOOL_VERSION;
}
