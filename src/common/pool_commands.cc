#include "common/pool_commands.h"

#include <algorithm>

namespace kvpool {

std::string LoopbackAddress(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

std::vector<std::string> MasterCommandLine(uint16_t rpc_port,
                                           const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"master", "--rpc_host", "127.0.0.1", "--rpc_port",
                                   std::to_string(rpc_port)};
  args.insert(args.end(), flags.begin(), flags.end());
  if (std::find(flags.begin(), flags.end(), "--metrics_port") == flags.end()) {
    args.insert(args.end(), {"--metrics_port", "0"});
  }
  return args;
}

std::vector<std::string> NodeCommandLine(uint16_t port, const std::string& master_address,
                                         const std::string& segment_size,
                                         const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"node",
                                   "--host",
                                   "127.0.0.1",
                                   "--port",
                                   std::to_string(port),
                                   "--master_server_address",
                                   master_address,
                                   "--global_segment_size",
                                   segment_size};
  args.insert(args.end(), flags.begin(), flags.end());
  return args;
}

}  // namespace kvpool
