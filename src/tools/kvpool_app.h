// The `kvpool` command line (every role and the client commands), shared by the two binaries:
// `kvpool`, which a user deploys, and `kvpool-bench`, which is the same program plus the
// benchmark (src/tools/bench, with its Redis client), built only with -DKVPOOL_BUILD_BENCH_TOOL.
#pragma once

#include <CLI/CLI.hpp>

namespace kvpool::tools {

// Commands a binary adds to the shared ones. Add runs before parsing; the object must outlive
// RunKvpool. `exit_code` receives the result of a command that runs inside the parse.
class ExtraCommands {
 public:
  virtual ~ExtraCommands() = default;
  virtual void Add(CLI::App& app, int& exit_code) = 0;
};

// Parses argv and runs the chosen command on the calling thread (main: it blocks the
// termination signals first, so every thread inherits the mask). Returns the process's exit
// code: 0, 1 a failure, 2 a usage error (see docs/operations.md).
int RunKvpool(int argc, char** argv, ExtraCommands* extra);

}  // namespace kvpool::tools
