#include "client/embedded/buffer_registry.h"

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

// A range whose end wraps past 2^64 is a bad pointer or size, not an unregistered buffer: the
// message must say so (issue 16, item 9: ptr = 2^64 - 4096, size = 8192).
TEST(BufferRegistryTest, WrappingRangeIsNamedAsSuch) {
  BufferRegistry r;
  std::vector<char> mem(4096);
  ASSERT_TRUE(r.Register(mem.data(), mem.size()).ok());
  const void* top = reinterpret_cast<void*>(~uintptr_t{0} - 4095);
  for (const Status& st : {r.Check(top, 8192, "key=k"), r.Register(top, 8192)}) {
    EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS);
    EXPECT_NE(st.message().find("runs past the end of the address space"), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("size=8192"), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find("not inside a registered region"), std::string::npos)
        << st.message();
  }
  Status null = r.Check(nullptr, 10, "key=k");
  EXPECT_NE(null.message().find("key=k: buffer ptr is null"), std::string::npos) << null.message();
  // Ending just below 2^64 is still an address range (refused only as unregistered).
  Status below = r.Check(top, 4095, "key=k");
  EXPECT_NE(below.message().find("not inside a registered region"), std::string::npos)
      << below.message();
}

}  // namespace kvpool::client
