#include "common/checksum.h"

#include <gtest/gtest.h>

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

TEST(ChecksumTest, OneFlippedByteChangesIt) {
  std::string bytes(4096, 'x');
  const uint64_t before = ChecksumOf(bytes.data(), bytes.size());
  bytes[1234] ^= 1;
  EXPECT_NE(ChecksumOf(bytes.data(), bytes.size()), before);
}

}  // namespace
}  // namespace kvpool
