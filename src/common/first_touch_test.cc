#include "common/first_touch.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace kvpool {
namespace {

TEST(ZeroByKernelTest, ZerosWrittenMemoryExactlyOverItsRange) {
  std::vector<uint8_t> buf(3 * 4096 + 100, 0xab);
  ASSERT_TRUE(ZeroByKernel(buf.data() + 10, 2 * 4096 + 7));
  for (size_t i = 0; i < buf.size(); ++i) {
    const bool inside = i >= 10 && i < 10 + 2 * 4096 + 7;
    ASSERT_EQ(buf[i], inside ? 0 : 0xab) << "byte " << i;
  }
}

TEST(ZeroByKernelTest, FaultsInMemoryNeverTouchedAndLeavesItWritable) {
  const size_t size = 1 << 20;
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* bytes = static_cast<uint8_t*>(p);
  EXPECT_TRUE(ZeroByKernel(bytes, size));
  EXPECT_EQ(bytes[size - 1], 0);
  std::memset(bytes, 0x11, size);
  EXPECT_EQ(bytes[size / 2], 0x11);
  ::munmap(p, size);
}

TEST(ZeroByKernelTest, AnEmptyRangeIsDone) { EXPECT_TRUE(ZeroByKernel(nullptr, 0)); }

}  // namespace
}  // namespace kvpool
