#include "client/embedded/transfer_pace.h"

#include <gtest/gtest.h>

namespace kvpool::client {
namespace {

using std::chrono::microseconds;

TEST(TransferPaceTest, UnknownUntilATransferLargeEnoughToSample) {
  TransferPace p;
  EXPECT_EQ(p.NsPerKib(), 0u);
  p.Record(4096, microseconds(50));  // a small call's time is its fixed costs: not sampled
  p.Record(TransferPace::kMinSampleBytes - 1, microseconds(500));
  EXPECT_EQ(p.NsPerKib(), 0u);
  p.Record(1 << 20, microseconds(400));  // 1 MiB in 400 us: 390 ns per KiB
  EXPECT_EQ(p.NsPerKib(), 390u);
}

TEST(TransferPaceTest, FollowsTheRecentTransfersAndStaysInRange) {
  TransferPace p;
  p.Record(1 << 20, microseconds(1024));  // 1,000 ns per KiB
  p.Record(1 << 20, microseconds(0));     // clamped to 1 ns: weighs a quarter
  EXPECT_EQ(p.NsPerKib(), (3 * 1000 + 1) / 4);
  for (int i = 0; i < 40; ++i) p.Record(1 << 20, microseconds(205));  // ~200 ns per KiB
  EXPECT_NEAR(p.NsPerKib(), 200, 2);
  p.Record(1 << 20, std::chrono::seconds(100));  // a stalled transfer: capped
  EXPECT_LE(p.NsPerKib(), TransferPace::kMaxNsPerKib);
}

}  // namespace
}  // namespace kvpool::client
