#include "master/placement.h"

#include <gtest/gtest.h>

namespace kvpool::master {
namespace {

TEST(PlacementTest, ParsesTheThreeStrategies) {
  for (auto s : {PlacementStrategy::kRandom, PlacementStrategy::kFreeRatioFirst,
                 PlacementStrategy::kLocalFirst}) {
    EXPECT_EQ(*ParsePlacementStrategy(PlacementStrategyName(s)), s);
  }
  EXPECT_EQ(ParsePlacementStrategy("nearest").status().code(), ErrorCode::INVALID_PARAMS);
}

TEST(PlacementTest, FreeRatioFirstOrdersByFreeFraction) {
  std::mt19937_64 rng(1);
  std::vector<PlacementCandidate> c = {{100, 90, false}, {1000, 100, false}, {100, 50, false}};
  EXPECT_EQ(PlacementOrder(c, PlacementStrategy::kFreeRatioFirst, false, rng),
            (std::vector<size_t>{1, 2, 0}));
}

TEST(PlacementTest, LocalFirstAndSameHostPreferenceComeFirst) {
  std::mt19937_64 rng(2);
  std::vector<PlacementCandidate> c = {{100, 0, false}, {100, 0, true}, {100, 0, false}};
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(PlacementOrder(c, PlacementStrategy::kLocalFirst, false, rng)[0], 1u);
    EXPECT_EQ(PlacementOrder(c, PlacementStrategy::kRandom, true, rng)[0], 1u);
  }
  // Same-host preference on top of free_ratio_first: local ones first, each group by free ratio.
  std::vector<PlacementCandidate> d = {{100, 10, false}, {100, 80, true}, {100, 20, true}};
  EXPECT_EQ(PlacementOrder(d, PlacementStrategy::kFreeRatioFirst, true, rng),
            (std::vector<size_t>{2, 1, 0}));
}

TEST(PlacementTest, RandomVisitsEverySegmentFirstSometimes) {
  std::mt19937_64 rng(3);
  std::vector<PlacementCandidate> c(4, {100, 0, false});
  std::vector<int> first(4, 0);
  for (int i = 0; i < 400; ++i)
    ++first[PlacementOrder(c, PlacementStrategy::kRandom, false, rng)[0]];
  for (int f : first) EXPECT_GT(f, 50);
}

}  // namespace
}  // namespace kvpool::master
