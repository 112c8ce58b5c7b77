// `kvpool-bench`: the kvpool program with the benchmark (`kvpool-bench bench ...`, which
// `kvpool bench ...` runs). It starts its private pool's master and nodes, and its TCP peer and
// engine processes, as this same binary (/proc/self/exe), so it carries every role too.
#include "tools/bench/bench_command.h"
#include "tools/kvpool_app.h"

namespace {

class BenchCommands : public kvpool::tools::ExtraCommands {
 public:
  void Add(CLI::App& app, int& exit_code) override {
    kvpool::tools::bench::AddBenchCommands(app, options_, exit_code);
  }

 private:
  kvpool::tools::bench::BenchCommandOptions options_;
};

}  // namespace

int main(int argc, char** argv) {
  BenchCommands bench;
  return kvpool::tools::RunKvpool(argc, argv, &bench);
}
