#include "master/eviction.h"

#include <gtest/gtest.h>

#include <string>

namespace kvpool::master {
namespace {

constexpr uint64_t kObj = 1024;
// Objects keep their last access in ticks of 2^24 ns; the tests' access times count ticks.
constexpr int64_t kAccessTickNs = int64_t{1} << 24;

class EvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seg_a_ = registry_.Mount("a", "c", 1, "h:1", 200 * kObj, 0)->id;
    seg_b_ = registry_.Mount("b", "c", 1, "h:2", 200 * kObj, 0)->id;
  }

  // A complete object of kObj bytes on `segment` (any when 0), last accessed at `access`.
  Object* Put(const std::string& key, int64_t access, uint64_t segment = 0, uint8_t flags = 0,
              bool pending = false, int64_t lease_until = 0) {
    std::vector<std::string_view> pref;
    std::string name = segment == seg_a_ ? "a" : "b";
    if (segment != 0) pref.push_back(name);
    auto placed = registry_.Allocate(kObj, 1, pref);
    EXPECT_EQ(placed.size(), 1u);
    std::vector<ReplicaRef> refs = {placed[0].ref};
    ObjectPtr o = Object::Create(key, kObj, refs);
    o->set_last_access_ns(access * kAccessTickNs);
    o->flags = flags;
    o->state = pending ? ObjectState::kPending : ObjectState::kComplete;
    o->stamp_ns = lease_until;
    return table_.Lock(key)->Insert(std::move(o));
  }
  bool Has(const std::string& key) { return table_.Lock(key)->Find(key) != nullptr; }

  ObjectTable table_;
  SegmentRegistry registry_{64};
  Evictor evictor_{&table_, &registry_};
  uint64_t seg_a_ = 0, seg_b_ = 0;
};

TEST_F(EvictionTest, FreesAboutTheTargetOldestFirst) {
  for (int i = 0; i < 200; ++i) Put("k" + std::to_string(i), /*access=*/i);
  uint64_t target = 20 * kObj;  // 5% of 400 objects' worth of capacity
  EvictionResult r = evictor_.Evict(target, std::nullopt, /*now_ns=*/1000);
  EXPECT_GE(r.bytes, target);
  // Per-shard rounding may take a few objects more, never many.
  EXPECT_LE(r.bytes, target + 8 * kObj);
  EXPECT_EQ(r.objects * kObj, r.bytes);
  EXPECT_EQ(table_.size(), 200 - r.objects);
  EXPECT_EQ(registry_.Usage().used, (200 - r.objects) * kObj);
  EXPECT_EQ(evictor_.evicted_total(), r.objects);
  // Approximately LRU: the newest half survives entirely.
  for (int i = 100; i < 200; ++i) EXPECT_TRUE(Has("k" + std::to_string(i))) << i;
}

TEST_F(EvictionTest, NeverLeasedPendingOrHardPinned) {
  for (int i = 0; i < 10; ++i) {
    Put("leased" + std::to_string(i), 0, 0, 0, false, /*lease_until=*/5000);
    Put("pending" + std::to_string(i), 0, 0, 0, /*pending=*/true);
    Put("hard" + std::to_string(i), 0, 0, kHardPin);
  }
  Put("plain", 100);
  EvictionResult r = evictor_.Evict(1000 * kObj, std::nullopt, /*now_ns=*/1000);
  EXPECT_EQ(r.objects, 1u);
  EXPECT_FALSE(Has("plain"));
  EXPECT_EQ(table_.size(), 30u);
  // Once the lease ends the leased objects are candidates.
  r = evictor_.Evict(1000 * kObj, std::nullopt, /*now_ns=*/5000);
  EXPECT_EQ(r.objects, 10u);
  EXPECT_EQ(table_.size(), 20u);
}

TEST_F(EvictionTest, SoftPinnedGoLast) {
  for (int i = 0; i < 20; ++i) Put("soft" + std::to_string(i), /*access=*/0, 0, kSoftPin);
  for (int i = 0; i < 20; ++i) Put("plain" + std::to_string(i), /*access=*/100 + i);
  EvictionResult r = evictor_.Evict(20 * kObj, std::nullopt, 1000);
  EXPECT_EQ(r.objects, 20u);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(Has("soft" + std::to_string(i)));
  r = evictor_.Evict(5 * kObj, std::nullopt, 1000);
  EXPECT_GE(r.objects, 5u);
  EXPECT_LT(table_.size(), 20u);
}

TEST_F(EvictionTest, SegmentTargetOnlyTouchesThatSegment) {
  for (int i = 0; i < 30; ++i) Put("a" + std::to_string(i), i, seg_a_);
  for (int i = 0; i < 30; ++i) Put("b" + std::to_string(i), 0, seg_b_);  // older, elsewhere
  EvictionResult r = evictor_.Evict(10 * kObj, seg_a_, 1000);
  EXPECT_GE(r.bytes, 10 * kObj);
  for (int i = 0; i < 30; ++i) EXPECT_TRUE(Has("b" + std::to_string(i)));
  EXPECT_EQ(registry_.Stats().size(), 2u);
  for (const auto& s : registry_.Stats()) {
    EXPECT_EQ(s.used, (s.id == seg_a_ ? 30 - r.objects : 30) * kObj);
  }
}

TEST_F(EvictionTest, NothingEvictableFreesNothing) {
  Put("p", 0, 0, 0, /*pending=*/true);
  EvictionResult r = evictor_.Evict(kObj, std::nullopt, 0);
  EXPECT_EQ(r.objects, 0u);
  EXPECT_EQ(r.bytes, 0u);
  EXPECT_EQ(evictor_.Evict(0, std::nullopt, 0).objects, 0u);
}

}  // namespace
}  // namespace kvpool::master
