// Graceful node drain (docs/failure-model.md): a node stopped with SIGTERM first stops taking
// new replicas, then unmounts; objects with a copy elsewhere stay readable byte-exact.
#include <gtest/gtest.h>
#include <signal.h>

#include "pool.h"

namespace kvpool::testing {
namespace {

std::vector<uint8_t> ValueOf(const std::string& key, size_t n) { return ObjectBytes(key, 0, n); }

TEST(DrainTest, SigtermDrainsAndCopiesStayReadable) {
  Pool pool;
  for (int i = 0; i < 3; ++i) pool.AddNode("32MB");
  auto client = pool.NewClient();
  ASSERT_NE(client, nullptr);
  ReplicateConfig two;
  two.replica_num = 2;
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> values;
  for (int i = 0; i < 200; ++i) {
    keys.push_back("drain-" + std::to_string(i));
    values.push_back(ValueOf(keys.back(), 4096 + i));
  }
  std::vector<std::span<const uint8_t>> spans(values.begin(), values.end());
  for (const Status& st : client->BatchPut(keys, spans, two)) ASSERT_TRUE(st.ok()) << st.ToString();

  pool.node(0).Signal(SIGTERM);
  EXPECT_EQ(pool.node(0).Wait(std::chrono::seconds(20)), 0) << pool.node(0).Log();
  EXPECT_NE(pool.node(0).Log().find("draining: no new replicas"), std::string::npos)
      << pool.node(0).Log();
  EXPECT_TRUE(pool.master().WaitForLog("draining", std::chrono::seconds(5)));
  ASSERT_TRUE(pool.WaitForSegments(2));

  auto got = client->BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << got[i].status().ToString();
    EXPECT_EQ(*got[i], values[i]) << keys[i];
  }
  // New puts land on the nodes that remain.
  auto st = client->BatchPut({"after"}, {std::span<const uint8_t>(values[0])}, two);
  EXPECT_TRUE(st[0].ok()) << st[0].ToString();
}

TEST(DrainTest, DrainCopyMovesSoleReplicasBeforeTheNodeLeaves) {
  Pool pool;
  pool.AddNode("32MB", {"--drain_copy_ms", "10000"});
  for (int i = 0; i < 2; ++i) pool.AddNode("32MB");
  auto client = pool.NewClient();
  ASSERT_NE(client, nullptr);
  ReplicateConfig here;  // one replica, on the node that will leave
  here.preferred_segments = {pool.node_segment(0)};
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> values;
  for (int i = 0; i < 150; ++i) {
    keys.push_back("sole-" + std::to_string(i));
    values.push_back(ValueOf(keys.back(), 1000 + 37 * i));
  }
  std::vector<std::span<const uint8_t>> spans(values.begin(), values.end());
  for (const Status& st : client->BatchPut(keys, spans, here)) {
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  auto stat = client->Stat();
  ASSERT_TRUE(stat.ok());
  for (const auto& seg : stat->segments) {
    if (seg.name == pool.node_segment(0)) {
      EXPECT_EQ(seg.object_count, keys.size());
    }
  }

  pool.node(0).Signal(SIGTERM);
  EXPECT_EQ(pool.node(0).Wait(std::chrono::seconds(30)), 0) << pool.node(0).Log();
  EXPECT_NE(pool.node(0).Log().find("drain copy: copied=150"), std::string::npos)
      << pool.node(0).Log();
  ASSERT_TRUE(pool.WaitForSegments(2));
  auto got = client->BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << got[i].status().ToString();
    EXPECT_EQ(*got[i], values[i]) << keys[i];
  }
}

}  // namespace
}  // namespace kvpool::testing
