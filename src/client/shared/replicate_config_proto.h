// ReplicateConfig <-> its wire form (rpc::ReplicateConfig), shared by the put path, the
// standalone client and the node's attach service.
#pragma once

#include <cstddef>
#include <vector>

#include "kvpool/client.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::client {

rpc::ReplicateConfig ToProto(const ReplicateConfig& config);
// The wire's replica_num 0 means 1.
ReplicateConfig FromProto(const rpc::ReplicateConfig& proto);

// group_ids holds one id per key of its batch, so a call that sends part of a batch (a chunk,
// one staging round, the keys that passed a check) sends the ids of those keys only.
// INVALID_PARAMS unless config.group_ids is empty or has one id per key of `keys` keys.
Status CheckGroupIds(const ReplicateConfig& config, size_t keys);
// `config` for keys `indices` of its batch, in that order: group_ids[indices[0]], ... (the
// other fields unchanged). REQUIRES: CheckGroupIds(config, n) passed with every index < n.
ReplicateConfig ConfigForKeys(const ReplicateConfig& config, const std::vector<size_t>& indices);
// ConfigForKeys for keys [begin, end).
ReplicateConfig ConfigForKeys(const ReplicateConfig& config, size_t begin, size_t end);

}  // namespace kvpool::client
