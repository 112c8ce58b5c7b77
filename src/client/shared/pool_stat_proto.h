// PoolStat <-> its wire form (rpc::StatReply): the one conversion shared by the embedded client
// (the master's STAT reply), the node's attach service (LOCAL_STAT, answered from its embedded
// client) and the standalone client, so a field added to PoolStat reaches all three.
#pragma once

#include "kvpool/client.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::client {

// Fills every PoolStat field and, per segment, PoolSegmentStat's (the reply's master_epoch and
// the segments' client_id, draining and incarnation have no PoolStat field and are dropped).
PoolStat PoolStatFromProto(const rpc::StatReply& reply);
rpc::StatReply ToProto(const PoolStat& stat);

}  // namespace kvpool::client
