#include "client/buffer_registry.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvpool::client {

TEST(BufferRegistryTest, InsideOneRegionOnly) {
  std::vector<char> mem(1000);
  BufferRegistry r;
  ASSERT_TRUE(r.Register(mem.data(), 500).ok());
  ASSERT_TRUE(r.Register(mem.data() + 500, 500).ok());
  EXPECT_TRUE(r.Check(mem.data(), 500, "k").ok());
  EXPECT_TRUE(r.Check(mem.data() + 100, 400, "k").ok());
  EXPECT_TRUE(r.Check(mem.data() + 600, 400, "k").ok());
  // Spanning two registrations is refused: each call's memory must be one region.
  EXPECT_EQ(r.Check(mem.data() + 400, 200, "k").code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(r.Check(mem.data() + 900, 101, "k").code(), ErrorCode::INVALID_PARAMS);
  int other = 0;
  Status st = r.Check(&other, sizeof(other), "key=abc");
  EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(st.message().find("key=abc"), std::string::npos);
  EXPECT_NE(st.message().find("register_buffer"), std::string::npos);
}

TEST(BufferRegistryTest, ReRegisterAndUnregister) {
  std::vector<char> mem(100);
  BufferRegistry r;
  ASSERT_TRUE(r.Register(mem.data(), 50).ok());
  ASSERT_TRUE(r.Register(mem.data(), 100).ok());      // same start again: harmless, keeps larger
  ASSERT_TRUE(r.Register(mem.data() + 10, 20).ok());  // overlapping: harmless
  EXPECT_TRUE(r.Check(mem.data() + 60, 40, "k").ok());
  EXPECT_TRUE(r.Unregister(mem.data()).ok());
  EXPECT_EQ(r.Unregister(mem.data()).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_FALSE(r.Check(mem.data() + 60, 40, "k").ok());
  EXPECT_TRUE(r.Check(mem.data() + 10, 20, "k").ok());
}

TEST(BufferRegistryTest, RejectsBadRegions) {
  BufferRegistry r;
  char c;
  EXPECT_EQ(r.Register(nullptr, 10).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(r.Register(&c, 0).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(r.Register(reinterpret_cast<void*>(~uintptr_t{0} - 4), 100).code(),
            ErrorCode::INVALID_PARAMS);
}

}  // namespace kvpool::client
