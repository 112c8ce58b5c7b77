// The command lines of a pool's roles on 127.0.0.1 (`kvpool master`, `kvpool node`): one
// definition for every pool kvpool's own tools start, the bench's private pool
// (tools/bench/pool_launcher.h) and the integration tests' pools (tests/integration/pool.h,
// standalone_support.h, ha_support.h). Started through common/child_process.h. Not used by the
// roles themselves.
//
// Threading: pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvpool {

// "127.0.0.1:PORT": the address of a pool process on `port`.
std::string LoopbackAddress(uint16_t port);

// `master` serving RPC on 127.0.0.1:`rpc_port`, then `flags`. Its HTTP admin port is any free
// one (--metrics_port 0) unless `flags` name one: pools run side by side, and the default
// (9003) would collide.
std::vector<std::string> MasterCommandLine(uint16_t rpc_port,
                                           const std::vector<std::string>& flags = {});

// `node` serving its segment "127.0.0.1:`port`" of `segment_size` bytes ("64MB", or a number)
// and mounting it at `master_address`, then `flags`.
std::vector<std::string> NodeCommandLine(uint16_t port, const std::string& master_address,
                                         const std::string& segment_size,
                                         const std::vector<std::string>& flags = {});

}  // namespace kvpool
