// ReplicateConfig <-> its wire form (rpc::ReplicateConfig), shared by the put path, the
// standalone client and the node's attach service.
#pragma once

#include "kvpool/client.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::client {

rpc::ReplicateConfig ToProto(const ReplicateConfig& config);
// The wire's replica_num 0 means 1.
ReplicateConfig FromProto(const rpc::ReplicateConfig& proto);

}  // namespace kvpool::client
