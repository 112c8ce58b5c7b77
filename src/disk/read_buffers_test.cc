#include "disk/read_buffers.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace kvpool::disk {
namespace {

constexpr uint64_t kBufMiB = 1 << 20;

TEST(ReadBuffersTest, AReturnedBufferServesTheNextReadOfASimilarSize) {
  auto pool = ReadBuffers::Create(4096, 64 * kBufMiB);
  uint8_t* first = nullptr;
  {
    auto b = pool->Acquire(10 * kBufMiB);
    ASSERT_GE(b->size(), 10 * kBufMiB);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 4096, 0u);
    first = b->data();
  }
  EXPECT_EQ(pool->kept_bytes(), 10 * kBufMiB);
  auto again = pool->Acquire(9 * kBufMiB);  // fits, and not more than twice the ask
  EXPECT_EQ(again->data(), first);
  EXPECT_EQ(pool->reused(), 1u);
  EXPECT_EQ(pool->kept_bytes(), 0u);
  auto small = pool->Acquire(kBufMiB);  // nothing idle: a new one
  EXPECT_NE(small->data(), first);
}

TEST(ReadBuffersTest, KeepsNoMoreThanItsCapAndNothingTwiceTooLarge) {
  auto pool = ReadBuffers::Create(4096, 24 * kBufMiB);
  {
    auto a = pool->Acquire(16 * kBufMiB);
    auto b = pool->Acquire(16 * kBufMiB);
    auto huge = pool->Acquire(100 * kBufMiB);  // above the cap: freed on return
  }
  EXPECT_LE(pool->kept_bytes(), 24 * kBufMiB);
  EXPECT_EQ(pool->kept_bytes(), 16 * kBufMiB);
  auto tiny = pool->Acquire(kBufMiB);  // the idle 16 MiB is more than twice 1 MiB
  EXPECT_EQ(pool->reused(), 0u);
}

TEST(ReadBuffersTest, BuffersMayOutliveThePoolsOwner) {
  auto pool = ReadBuffers::Create(4096, 8 * kBufMiB);
  auto b = pool->Acquire(kBufMiB);
  pool.reset();  // the buffer's deleter keeps the pool
  b->data()[0] = 1;
  b.reset();
}

}  // namespace
}  // namespace kvpool::disk
