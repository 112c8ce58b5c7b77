#include "tools/kvpool_app.h"

#include <iostream>

#include "common/log.h"
#include "common/signals.h"
#include "master/master.h"
#include "master/master_options.h"
#include "node/node.h"
#include "node/node_options.h"
#include "tools/client_commands.h"
#include "tools/events_command.h"
#include "tools/tenant_key_command.h"
#include "tools/top_command.h"

namespace kvpool::tools {

namespace {

// Prints why `role` cannot start (naming the --config line a bad value came from) and returns
// the exit code: 1 a failure, 2 a usage error.
int CannotStart(const char* role, const Status& st, const ConfigSource& source, int code) {
  std::cerr << "kvpool " << role << ": " << WithConfigSource(st, source).ToString() << "\n";
  return code;
}

}  // namespace

int RunKvpool(int argc, char** argv, ExtraCommands* extra) {
  // Before any thread starts, so every thread inherits the mask and main can sigwait.
  kvpool::BlockTerminationSignals();
  CLI::App app{"kvpool: a distributed KV-cache store for LLM inference"};
  app.require_subcommand(1);
  int exit_code = 0;

  kvpool::master::MasterOptions master_options;
  auto* master = app.add_subcommand("master", "Run the metadata service");
  kvpool::master::AddMasterFlags(*master, master_options);

  kvpool::node::NodeOptions node_options;
  auto* node = app.add_subcommand("node", "Run a storage node that serves DRAM to the pool");
  kvpool::node::AddNodeFlags(*node, node_options);

  ClientCommandOptions client_options;
  AddClientCommands(app, client_options, exit_code);
  TenantKeyCommandOptions tenant_key_options;
  AddTenantKeyCommand(app, tenant_key_options, exit_code);
  TopCommandOptions top_options;
  AddTopCommand(app, top_options, exit_code);
  EventsCommandOptions events_options;
  AddEventsCommand(app, events_options, exit_code);
  if (extra != nullptr) extra->Add(app, exit_code);
  kvpool::InitLogging("warn", "kvpool").ok();

  try {
    app.parse(argc, argv);  // runs the client commands, in their callbacks
  } catch (const std::bad_alloc&) {
    std::cerr << "kvpool: out of memory\n";
    return 1;
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2 as documented (CLI11's own codes
    // are 101..121).
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    // A bug, but a message and exit 1 rather than an abort.
    std::cerr << "kvpool: " << e.what() << "\n";
    return 1;
  }
  if (master->parsed()) {
    const auto& source = master_options.config_source;
    if (auto st = kvpool::InitLogging(master_options.log_level, "master"); !st.ok()) {
      return CannotStart("master", st, source, 2);
    }
    // A malformed etcd address fails the start (exit 1), as an unreachable etcd does.
    if (auto st = kvpool::master::ValidateEtcdAddress(master_options); !st.ok()) {
      return CannotStart("master", st, source, 1);
    }
    if (auto st = kvpool::master::ValidateMasterOptions(master_options); !st.ok()) {
      return CannotStart("master", st, source, 2);
    }
    if (auto st = kvpool::rpc::ResolveAuthSecret(master_options.security); !st.ok()) {
      return CannotStart("master", st, source, 2);
    }
    return kvpool::master::RunMaster(master_options);
  }
  if (node->parsed()) {
    const auto& source = node_options.config_source;
    if (auto st = kvpool::InitLogging(node_options.log_level, "node"); !st.ok()) {
      return CannotStart("node", st, source, 2);
    }
    // A malformed master address fails the start (exit 1), as it does for the CLI's --master.
    if (auto st = kvpool::node::ValidateMasterAddress(node_options); !st.ok()) {
      return CannotStart("node", st, source, 1);
    }
    if (auto st = kvpool::node::ValidateNodeOptions(node_options); !st.ok()) {
      return CannotStart("node", st, source, 2);
    }
    return kvpool::node::RunNode(node_options);
  }
  return exit_code;
}

}  // namespace kvpool::tools
