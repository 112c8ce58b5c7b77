#include "client/replicate_config_proto.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace kvpool::client {

// replica_num is a size_t in the API and 32 bits on the wire: a huge count must arrive as "too
// many" (the master refuses it), never wrap to a small one (2^32 would become 0, i.e. 1).
TEST(ReplicateConfigProtoTest, ReplicaNumSaturatesInsteadOfWrapping) {
  ReplicateConfig c;
  for (uint64_t n : {uint64_t{1} << 32, (uint64_t{1} << 32) + 1, uint64_t{1} << 40, UINT64_MAX}) {
    c.replica_num = n;
    EXPECT_EQ(ToProto(c).replica_num(), UINT32_MAX) << n;
  }
  c.replica_num = kMaxReplicaNum;
  EXPECT_EQ(ToProto(c).replica_num(), 16u);
  EXPECT_EQ(FromProto(ToProto(c)).replica_num, kMaxReplicaNum);
}

}  // namespace kvpool::client
