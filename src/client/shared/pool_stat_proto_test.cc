#include "client/shared/pool_stat_proto.h"

#include <gtest/gtest.h>

namespace kvpool::client {

// Every PoolStat field survives the trip through the attach service's LOCAL_STAT reply (a field
// the conversion forgets reads 0 on standalone clients only).
TEST(PoolStatProtoTest, EveryFieldRoundTrips) {
  PoolStat s;
  s.capacity = 1;
  s.used = 2;
  s.object_count = 3;
  s.client_count = 4;
  s.evicted_total = 5;
  s.leases_held = 6;
  s.bytes_leased = 7;
  s.refused_leased_or_pinned = 8;
  s.refused_tenant_quota = 9;
  s.refused_no_segment = 10;
  s.refused_offload_pending = 11;
  s.ha_role = "leader";
  s.leader_epoch = 11;
  s.leader_address = "127.0.0.1:1";
  s.disk_capacity = 12;
  s.disk_used = 13;
  s.disk_replicas = 14;
  s.segments.push_back({"dram", "127.0.0.1:2", 15, 16, 17, 0});
  s.segments.push_back({"disk", "127.0.0.1:3", 18, 19, 20, 1});
  const PoolStat t = PoolStatFromProto(ToProto(s));
  EXPECT_EQ(t.capacity, 1u);
  EXPECT_EQ(t.used, 2u);
  EXPECT_EQ(t.object_count, 3u);
  EXPECT_EQ(t.client_count, 4u);
  EXPECT_EQ(t.evicted_total, 5u);
  EXPECT_EQ(t.leases_held, 6u);
  EXPECT_EQ(t.bytes_leased, 7u);
  EXPECT_EQ(t.refused_leased_or_pinned, 8u);
  EXPECT_EQ(t.refused_tenant_quota, 9u);
  EXPECT_EQ(t.refused_no_segment, 10u);
  EXPECT_EQ(t.refused_offload_pending, 11u);
  EXPECT_EQ(t.ha_role, "leader");
  EXPECT_EQ(t.leader_epoch, 11u);
  EXPECT_EQ(t.leader_address, "127.0.0.1:1");
  EXPECT_EQ(t.disk_capacity, 12u);
  EXPECT_EQ(t.disk_used, 13u);
  EXPECT_EQ(t.disk_replicas, 14u);
  ASSERT_EQ(t.segments.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(t.segments[i].name, s.segments[i].name);
    EXPECT_EQ(t.segments[i].endpoint, s.segments[i].endpoint);
    EXPECT_EQ(t.segments[i].size, s.segments[i].size);
    EXPECT_EQ(t.segments[i].used, s.segments[i].used);
    EXPECT_EQ(t.segments[i].object_count, s.segments[i].object_count);
    EXPECT_EQ(t.segments[i].tier, s.segments[i].tier);
  }
}

}  // namespace kvpool::client
