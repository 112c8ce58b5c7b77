#include "master/segment_registry.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace kvpool::master {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(SegmentRegistryTest, MountIsIdempotentForItsClientOnly) {
  SegmentRegistry r(64);
  auto a = r.Mount("n1:1", "c1", 1, "127.0.0.1:1", kMiB, 0);
  ASSERT_TRUE(a.ok());
  auto again = r.Mount("n1:1", "c1", 2, "127.0.0.1:1", kMiB, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, a->id);
  EXPECT_EQ(r.Mount("n1:1", "c2", 3, "127.0.0.1:1", kMiB, 0).code(),
            ErrorCode::SEGMENT_ALREADY_EXISTS);
  EXPECT_EQ(r.Mount("n1:1", "c1", 2, "127.0.0.1:1", 2 * kMiB, 0).code(),
            ErrorCode::SEGMENT_ALREADY_EXISTS);
  EXPECT_EQ(r.Mount("n1:1", "c1", 2, "127.0.0.1:9", kMiB, 0).code(),
            ErrorCode::SEGMENT_ALREADY_EXISTS);
  EXPECT_EQ(r.Mount("", "c1", 1, "127.0.0.1:1", kMiB, 0).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(r.Mount("small", "c1", 1, "127.0.0.1:1", 63, 0).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(r.Mount(std::string(2000, 'x'), "c1", 1, "127.0.0.1:1", kMiB, 0).code(),
            ErrorCode::INVALID_PARAMS);
}

TEST(SegmentRegistryTest, RestartedHostReplacesItsDeadSegmentAtOnce) {
  SegmentRegistry r(64);
  auto old = r.Mount("n1:1", "c-old", 1, "127.0.0.1:1", kMiB, 0x1111);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->replaced, 0u);
  // The same memory mounted again by its own client: the same segment.
  auto again = r.Mount("n1:1", "c-old", 1, "127.0.0.1:1", kMiB, 0x1111);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, old->id);
  // Another process (new client id, new memory) on the same endpoint: the host restarted.
  auto fresh = r.Mount("n1:1", "c-new", 2, "127.0.0.1:1", kMiB, 0x2222);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->replaced, old->id);
  EXPECT_NE(fresh->id, old->id);
  std::string name, ep;
  uint64_t incarnation = 0;
  EXPECT_FALSE(r.Describe(old->id, &name, &ep, &incarnation));
  ASSERT_TRUE(r.Describe(fresh->id, &name, &ep, &incarnation));
  EXPECT_EQ(incarnation, 0x2222u);
  // The dead client's expiry later unmounts nothing of the new one.
  EXPECT_TRUE(r.UnmountOwnedBy(1).empty());
  EXPECT_TRUE(r.Describe(fresh->id, &name, &ep));
  // Not a restart: another endpoint under the name, or an unknown incarnation.
  EXPECT_EQ(r.Mount("n1:1", "c-x", 3, "127.0.0.1:9", kMiB, 0x3333).code(),
            ErrorCode::SEGMENT_ALREADY_EXISTS);
  EXPECT_EQ(r.Mount("n1:1", "c-x", 3, "127.0.0.1:1", kMiB, 0).code(),
            ErrorCode::SEGMENT_ALREADY_EXISTS);
}

TEST(SegmentRegistryTest, UnmountErrorsAndIdsNeverReused) {
  SegmentRegistry r(64);
  uint64_t id1 = r.Mount("s", "c1", 1, "h:1", kMiB, 0)->id;
  EXPECT_EQ(r.Unmount("nope", "c1").code(), ErrorCode::SEGMENT_NOT_FOUND);
  EXPECT_EQ(r.Unmount("s", "c2").code(), ErrorCode::ILLEGAL_CLIENT);
  auto u = r.Unmount("s", "c1");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(*u, id1);
  uint64_t id2 = r.Mount("s", "c1", 1, "h:1", kMiB, 0)->id;
  EXPECT_NE(id1, id2);
  std::string name, ep;
  EXPECT_FALSE(r.Describe(id1, &name, &ep));
  EXPECT_TRUE(r.Describe(id2, &name, &ep));
  EXPECT_EQ(name, "s");
  EXPECT_EQ(ep, "h:1");
}

TEST(SegmentRegistryTest, UnmountOwnedByTakesOnlyThatRegistration) {
  SegmentRegistry r(64);
  uint64_t a = r.Mount("a", "c1", 1, "h:1", kMiB, 0)->id;
  uint64_t b = r.Mount("b", "c1", 1, "h:2", kMiB, 0)->id;
  r.Mount("c", "c2", 2, "h:3", kMiB, 0).status().ok();
  auto ids = r.UnmountOwnedBy(1);
  EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()), (std::set<uint64_t>{a, b}));
  EXPECT_EQ(r.Usage().segments, 1u);
}

TEST(SegmentRegistryTest, ReplicasGoToDistinctSegments) {
  SegmentRegistry r(64);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(r.Mount("s" + std::to_string(i), "c", 1, "h:1", kMiB, 0).ok());
  }
  for (int n = 0; n < 50; ++n) {
    auto p = r.Allocate(1000, 3, {});
    ASSERT_EQ(p.size(), 3u);
    std::set<uint64_t> segs;
    for (const auto& x : p) segs.insert(x.ref.segment_id);
    EXPECT_EQ(segs.size(), 3u);
  }
  // Asking for more replicas than segments places one per segment.
  EXPECT_EQ(r.Allocate(1000, 9, {}).size(), 4u);
}

TEST(SegmentRegistryTest, PreferredFirstAndExcludedNever) {
  SegmentRegistry r(64);
  uint64_t a = r.Mount("a", "c", 1, "h:1", kMiB, 0)->id;
  uint64_t b = r.Mount("b", "c", 1, "h:2", kMiB, 0)->id;
  std::vector<std::string_view> pref = {"b"};
  for (int i = 0; i < 20; ++i) {
    auto p = r.Allocate(100, 1, pref);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].ref.segment_id, b);
    EXPECT_EQ(p[0].segment_name, "b");
    EXPECT_EQ(p[0].endpoint, "h:2");
  }
  std::vector<uint64_t> excl = {b};
  for (int i = 0; i < 20; ++i) {
    auto p = r.Allocate(100, 1, pref, excl);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].ref.segment_id, a);
  }
  // A preferred segment without room is passed over.
  std::vector<std::string_view> unknown = {"zzz"};
  EXPECT_EQ(r.Allocate(100, 1, unknown).size(), 1u);
}

TEST(SegmentRegistryTest, RandomPlacementUsesEverySegment) {
  SegmentRegistry r(64);
  for (int i = 0; i < 4; ++i)
    r.Mount("s" + std::to_string(i), "c", 1, "h:1", kMiB, 0).status().ok();
  std::map<uint64_t, int> hits;
  for (int i = 0; i < 400; ++i) hits[r.Allocate(64, 1, {})[0].ref.segment_id]++;
  ASSERT_EQ(hits.size(), 4u);
  for (auto [id, n] : hits) EXPECT_GT(n, 40) << id;
}

TEST(SegmentRegistryTest, FreeReturnsSpaceAndStaleIdsAreIgnored) {
  SegmentRegistry r(64);
  uint64_t id = r.Mount("s", "c", 1, "h:1", 4096, 0)->id;
  auto p = r.Allocate(100, 1, {});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(r.Usage().used, 128u);  // rounded up to the alignment
  EXPECT_EQ(r.Stats()[0].replicas, 1u);
  EXPECT_TRUE(r.Allocate(4000, 1, {}).empty());
  r.Free(p[0].ref, 100);
  EXPECT_EQ(r.Usage().used, 0u);
  EXPECT_EQ(r.Stats()[0].replicas, 0u);
  ASSERT_EQ(r.Allocate(4096, 1, {}).size(), 1u);
  r.Free(ReplicaRef{id + 100, 0, 0, 0}, 64);  // stale: ignored
  EXPECT_EQ(r.Usage().used, 4096u);
}

TEST(SegmentRegistryTest, DeferredFreeWaitsForItsTime) {
  SegmentRegistry r(64);
  r.Mount("s", "c", 1, "h:1", 4096, 0).status().ok();
  auto p = r.Allocate(4096, 1, {});
  ASSERT_EQ(p.size(), 1u);
  r.FreeLater(p[0].ref, 4096, 1000);
  EXPECT_EQ(r.ReleaseDue(999), 0u);
  EXPECT_EQ(r.Usage().used, 4096u);
  EXPECT_EQ(r.ReleaseDue(1000), 1u);
  EXPECT_EQ(r.Usage().used, 0u);
  EXPECT_EQ(r.ReleaseDue(5000), 0u);
}

TEST(SegmentRegistryTest, UsageAndStats) {
  SegmentRegistry r(64);
  r.Mount("a", "c1", 1, "h:1", kMiB, 0).status().ok();
  r.Mount("b", "c2", 2, "h:2", 2 * kMiB, 0).status().ok();
  PoolUsage u = r.Usage();
  EXPECT_EQ(u.capacity, 3 * kMiB);
  EXPECT_EQ(u.largest_segment, 2 * kMiB);
  EXPECT_EQ(u.segments, 2u);
  auto stats = r.Stats();
  ASSERT_EQ(stats.size(), 2u);
  for (const auto& s : stats) EXPECT_EQ(s.client_id, s.name == "a" ? "c1" : "c2");
}

}  // namespace
}  // namespace kvpool::master
