// Placement through MasterCore: strategies, prefer_alloc_in_same_node, distinct segments per
// replica, best effort, and the checksum a commit records.
#include <gtest/gtest.h>

#include <map>

#include "master/master_test_util.h"

namespace kvpool::master::testing {
namespace {

class PlacementCoreTest : public CoreTest {
 protected:
  explicit PlacementCoreTest(const std::string& strategy = "random")
      : CoreTest(WithStrategy(strategy)) {}
  static MasterOptions WithStrategy(const std::string& s) {
    MasterOptions o;
    o.placement_strategy = s;
    return o;
  }
  // Mounts segment `name` served from `host`.
  void MountOn(const std::string& name, const std::string& host, uint64_t size = kSeg) {
    rpc::MountSegment m;
    m.set_client_id("node-" + name);
    m.set_segment_name(name);
    m.set_endpoint(host + ":7000");
    m.set_size(size);
    ASSERT_TRUE(core_.MountSegment(m, kT0).ok());
  }
  // PutStart of one key written from `client_host`; returns the replicas' segment names.
  std::vector<std::string> Place(const std::string& key, uint64_t size, uint32_t replicas,
                                 const std::string& client_host = "",
                                 bool prefer_same_node = false) {
    rpc::PutStart p;
    p.set_client_id("writer");
    p.set_client_host(client_host);
    auto* item = p.add_items();
    item->set_key(key);
    item->set_size(size);
    p.mutable_config()->set_replica_num(replicas);
    p.mutable_config()->set_prefer_alloc_in_same_node(prefer_same_node);
    auto r = core_.PutStart(p, kT0);
    EXPECT_TRUE(r.ok());
    std::vector<std::string> out;
    if (!r.ok() || r->results(0).code() != 0) return out;
    for (const auto& rep : r->results(0).replicas()) out.push_back(rep.segment_name());
    return out;
  }
};

TEST_F(PlacementCoreTest, ReplicasLandOnDistinctSegmentsBestEffort) {
  MountOn("a", "10.0.0.1");
  MountOn("b", "10.0.0.2");
  for (int i = 0; i < 20; ++i) {
    auto segs = Place("k" + std::to_string(i), 1000, 2);
    ASSERT_EQ(segs.size(), 2u);
    EXPECT_NE(segs[0], segs[1]);
  }
  EXPECT_EQ(Place("three", 1000, 3).size(), 2u);  // best effort: only two segments exist
}

TEST_F(PlacementCoreTest, PreferSameNodePlacesOnTheWritersHost) {
  MountOn("a", "10.0.0.1");
  MountOn("b", "10.0.0.2");
  MountOn("c", "10.0.0.3");
  for (int i = 0; i < 20; ++i) {
    auto segs = Place("k" + std::to_string(i), 1000, 1, "10.0.0.2", /*prefer_same_node=*/true);
    ASSERT_EQ(segs.size(), 1u);
    EXPECT_EQ(segs[0], "b");
  }
}

TEST_F(PlacementCoreTest, CommitRecordsTheChecksumGetReturnsIt) {
  MountOn("a", "10.0.0.1");
  ASSERT_EQ(Place("k", 1000, 1).size(), 1u);
  rpc::PutEnd e;
  e.set_client_id("writer");
  e.add_commit_keys("k");
  e.add_commit_checksums(0xfeedULL);
  ASSERT_TRUE(core_.PutEnd(e, kT0).ok());
  EXPECT_EQ(Get1("k").checksum(), 0xfeedULL);
}

class LocalFirstTest : public PlacementCoreTest {
 protected:
  LocalFirstTest() : PlacementCoreTest("local_first") {}
};

TEST_F(LocalFirstTest, WritersHostFirstThenOthers) {
  MountOn("a", "10.0.0.1");
  MountOn("b", "10.0.0.2");
  for (int i = 0; i < 20; ++i) {
    auto segs = Place("k" + std::to_string(i), 1000, 2, "10.0.0.2");
    ASSERT_EQ(segs.size(), 2u);
    EXPECT_EQ(segs[0], "b");
    EXPECT_EQ(segs[1], "a");
  }
}

class FreeRatioFirstTest : public PlacementCoreTest {
 protected:
  FreeRatioFirstTest() : PlacementCoreTest("free_ratio_first") {}
};

TEST_F(FreeRatioFirstTest, FillsSegmentsEvenly) {
  MountOn("small", "10.0.0.1", kSeg);
  MountOn("large", "10.0.0.2", 4 * kSeg);
  std::map<std::string, int> count;
  for (int i = 0; i < 100; ++i) ++count[Place("k" + std::to_string(i), 16 << 10, 1)[0]];
  // 1.6 MiB in all: free_ratio_first keeps both fill levels close (the large segment takes
  // about four fifths), where random would fill the small one at the same rate as the large.
  EXPECT_GE(count["large"], 75);
  EXPECT_LE(count["large"], 85);
}

TEST(PlacementOptionsTest, UnknownStrategyIsRefused) {
  MasterOptions o;
  o.placement_strategy = "closest";
  EXPECT_EQ(ValidateMasterOptions(o).code(), ErrorCode::INVALID_PARAMS);
  o.placement_strategy = "free_ratio_first";
  EXPECT_TRUE(ValidateMasterOptions(o).ok());
}

}  // namespace
}  // namespace kvpool::master::testing
