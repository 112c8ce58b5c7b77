#include "common/units.h"

#include <gtest/gtest.h>

namespace kvpool {

TEST(ParseSizeTest, AcceptsOperatorSpellings) {
  EXPECT_EQ(*ParseSize("1048576"), 1048576u);
  EXPECT_EQ(*ParseSize("4GB"), 4ull << 30);
  EXPECT_EQ(*ParseSize("4gb"), 4ull << 30);
  EXPECT_EQ(*ParseSize("512 MB"), 512ull << 20);
  EXPECT_EQ(*ParseSize("64KiB"), 64ull << 10);
  EXPECT_EQ(*ParseSize("1.5g"), 3ull << 29);
  EXPECT_EQ(*ParseSize("2T"), 2ull << 40);
}

TEST(ParseSizeTest, RejectsWithNamedError) {
  for (const char* bad : {"", "-1", "50%", "4XB", "abc", "1.3b", "99999999999999999999"}) {
    auto r = ParseSize(bad, "--global_segment_size");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.code(), ErrorCode::INVALID_PARAMS);
    EXPECT_NE(r.status().message().find("--global_segment_size"), std::string::npos);
  }
}

TEST(FormatSizeTest, HumanReadable) {
  EXPECT_EQ(FormatSize(512), "512 B");
  EXPECT_EQ(FormatSize(1536), "1.50 KiB");
  EXPECT_EQ(FormatSize(4ull << 30), "4.00 GiB");
}

}  // namespace kvpool
