#include "common/checksum.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <string>

namespace kvpool {
namespace {

TEST(ChecksumTest, SplitBuffersHashLikeOneBuffer) {
  std::string bytes(10000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 31 + 7);
  const uint64_t whole = ChecksumOf(bytes.data(), bytes.size());
  iovec parts[3] = {{bytes.data(), 1}, {bytes.data() + 1, 4999}, {bytes.data() + 5000, 5000}};
  EXPECT_EQ(ChecksumOf(parts), whole);
  EXPECT_NE(whole, 0u);
}

// Checksums are stored (master journals, node object lists) and compared across processes and
// versions: whatever code path computes them, they must be plain XXH3-64 with seed 0.
TEST(ChecksumTest, IsPlainXxh3WhicheverSizeAndSplit) {
  std::string bytes((1 << 20) + 3, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + (i >> 9));
  for (size_t n : {size_t{1}, size_t{16}, size_t{17}, size_t{128}, size_t{129}, size_t{240},
                   size_t{241}, size_t{1024}, size_t{4096}, size_t{65537}, bytes.size()}) {
    const uint64_t want = XXH3_64bits(bytes.data(), n);
    EXPECT_EQ(ChecksumOf(bytes.data(), n), want == 0 ? 1 : want) << n;
    iovec parts[2] = {{bytes.data(), n / 3}, {bytes.data() + n / 3, n - n / 3}};
    EXPECT_EQ(ChecksumOf(parts), want == 0 ? 1 : want) << n;
  }
}

TEST(ChecksumTest, OneFlippedByteChangesIt) {
  std::string bytes(4096, 'x');
  const uint64_t before = ChecksumOf(bytes.data(), bytes.size());
  bytes[1234] ^= 1;
  EXPECT_NE(ChecksumOf(bytes.data(), bytes.size()), before);
}

}  // namespace
}  // namespace kvpool
