// `kvpool`: one binary for every role and the client commands.
//   kvpool master [flags]        the metadata service
//   kvpool node [flags]          a storage node (standalone storage process)
//   kvpool put|get|exists|rm|stat ...   client commands against a running pool
//   kvpool top [--http host:port]       live view from the master's /metrics
//   kvpool tenant-key --tenant ID       a tenant's key, derived from the pool secret
//   kvpool bench ...             runs `kvpool-bench bench ...`, the benchmark built beside it
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tools/kvpool_app.h"

namespace {

// `kvpool bench` (and its hidden bench-* children) live in the kvpool-bench binary, so the
// deployed kvpool links neither the bench nor hiredis: run the one beside this binary.
int ExecBench(int argc, char** argv) {
  std::vector<char> self(4096);
  ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  std::string dir = n > 0 ? std::string(self.data(), static_cast<size_t>(n)) : std::string();
  dir = dir.substr(0, dir.rfind('/') + 1);
  const std::string bench = dir + "kvpool-bench";
  std::vector<char*> args(argv, argv + argc);
  args[0] = const_cast<char*>(bench.c_str());
  args.push_back(nullptr);
  ::execv(bench.c_str(), args.data());
  std::cerr << "kvpool " << argv[1] << ": the benchmark is the kvpool-bench binary, and " << bench
            << " cannot be run (" << std::strerror(errno)
            << "): build it with cmake -DKVPOOL_BUILD_BENCH_TOOL=ON\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strncmp(argv[1], "bench", 5) == 0 &&
      (argv[1][5] == '\0' || argv[1][5] == '-')) {
    return ExecBench(argc, argv);
  }
  return kvpool::tools::RunKvpool(argc, argv, nullptr);
}
