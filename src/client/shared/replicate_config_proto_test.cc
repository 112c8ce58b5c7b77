#include "client/shared/replicate_config_proto.h"

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

// A part of a batch carries the group ids of its keys only, in their order.
TEST(ReplicateConfigProtoTest, ConfigForKeysTakesThoseKeysGroupIds) {
  ReplicateConfig c;
  c.replica_num = 2;
  c.group_ids = {"g0", "g1", "g2", "g3"};
  EXPECT_TRUE(CheckGroupIds(c, 4).ok());
  Status wrong = CheckGroupIds(c, 3);
  EXPECT_EQ(wrong.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(wrong.message().find("group_ids has 4 entries for 3 keys"), std::string::npos)
      << wrong.message();
  EXPECT_EQ(ConfigForKeys(c, std::vector<size_t>{3, 0}).group_ids,
            (std::vector<std::string>{"g3", "g0"}));
  EXPECT_EQ(ConfigForKeys(c, 1, 3).group_ids, (std::vector<std::string>{"g1", "g2"}));
  EXPECT_EQ(ConfigForKeys(c, 1, 3).replica_num, 2u);
  ReplicateConfig none;  // no groups: any part, any count
  EXPECT_TRUE(CheckGroupIds(none, 7).ok());
  EXPECT_TRUE(ConfigForKeys(none, std::vector<size_t>{5, 6}).group_ids.empty());
}

}  // namespace kvpool::client
