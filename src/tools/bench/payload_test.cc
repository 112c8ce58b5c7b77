#include "tools/bench/payload.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace kvpool::tools::bench {
namespace {

constexpr uint64_t kPage = 64 * 1024;

TEST(PagePatternTest, FilledPageMatchesItsKey) {
  PagePattern p(kPage, 7);
  std::vector<uint64_t> page(kPage / 8);
  p.Fill(page.data(), 42);
  EXPECT_FALSE(p.FirstMismatch(page.data(), 42).has_value());
}

TEST(PagePatternTest, ContentIsNotConstant) {
  PagePattern p(kPage, 7);
  std::vector<uint64_t> page(kPage / 8);
  p.Fill(page.data(), 1);
  size_t same = 0;
  for (size_t i = 1; i < page.size(); ++i) same += page[i] == page[0];
  EXPECT_LT(same, 2u);
}

TEST(PagePatternTest, AnotherKeysBytesDifferInTheFirstWord) {
  PagePattern p(kPage, 7);
  std::vector<uint64_t> page(kPage / 8);
  p.Fill(page.data(), 1);
  EXPECT_EQ(p.FirstMismatch(page.data(), 2), std::optional<uint64_t>(0));
}

TEST(PagePatternTest, OneFlippedByteAtTheEndIsFound) {
  PagePattern p(kPage, 7);
  std::vector<uint64_t> page(kPage / 8);
  p.Fill(page.data(), 9);
  reinterpret_cast<uint8_t*>(page.data())[kPage - 1] ^= 0x01;
  EXPECT_EQ(p.FirstMismatch(page.data(), 9), std::optional<uint64_t>(kPage - 8));
}

TEST(PagePatternTest, ShiftedAndPoisonedPagesAreFound) {
  PagePattern p(kPage, 7);
  std::vector<uint64_t> page(kPage / 8 + 1);
  p.Fill(page.data() + 1, 5);  // the right bytes, one word late
  EXPECT_TRUE(p.FirstMismatch(page.data(), 5).has_value());
  std::memset(page.data(), 0xA5, kPage);  // a get that wrote nothing
  EXPECT_TRUE(p.FirstMismatch(page.data(), 5).has_value());
}

TEST(PagePatternTest, SeedsGiveDifferentPatterns) {
  PagePattern a(kPage, 1), b(kPage, 2);
  std::vector<uint64_t> page(kPage / 8);
  a.Fill(page.data(), 3);
  EXPECT_TRUE(b.FirstMismatch(page.data(), 3).has_value());
}

}  // namespace
}  // namespace kvpool::tools::bench
