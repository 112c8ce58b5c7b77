// A standalone client's region bookkeeping: ranges inside one allocation share one region, a
// call's memory must lie inside one registered range, and a region leaves with its last range.
#include "client/standalone/region_table.h"

#include <gtest/gtest.h>

#include "client/standalone/host_memory_registry.h"
#include "kvpool/host_allocator.h"

namespace kvpool::client {
namespace {

class RegionTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = alloc_.Alloc(1 << 20);
    ASSERT_TRUE(p.ok());
    base_ = static_cast<char*>(*p);
    auto found = HostMemoryRegistry::Instance().Find(base_, 1 << 20);
    ASSERT_TRUE(found.ok());
    Region r;
    r.id = table_.NextId();
    r.alloc_id = found->allocation.id;
    r.base = found->allocation.base;
    r.size = found->allocation.size;
    r.fd = std::make_shared<rpc::UniqueFd>(std::move(found->fd));
    region_ = r.id;
    table_.AddRegion(std::move(r));
  }
  void TearDown() override {
    if (base_ != nullptr) (void)alloc_.Free(base_);
  }
  uintptr_t At(size_t off) const { return reinterpret_cast<uintptr_t>(base_ + off); }

  HostMemAllocator alloc_;
  RegionTable table_;
  char* base_ = nullptr;
  uint64_t region_ = 0;
};

TEST_F(RegionTableTest, KAndVHalvesTranslateIntoOneRegion) {
  EXPECT_TRUE(table_.AddRange(At(0), 1 << 19, region_).empty());
  EXPECT_TRUE(table_.AddRange(At(1 << 19), 1 << 19, region_).empty());
  auto k = table_.Translate(base_ + 100, 1000, "key=k");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->region_id(), region_);
  EXPECT_EQ(k->offset(), 100u);
  auto v = table_.Translate(base_ + (1 << 19) + 5, 1000, "key=v");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->offset(), (1u << 19) + 5);
  // One call's buffer must lie inside one registered range.
  auto across = table_.Translate(base_ + (1 << 19) - 10, 20, "key=x");
  EXPECT_EQ(across.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(across.status().message().find("key=x"), std::string::npos);
  // Overlapping and repeated registration is harmless.
  EXPECT_TRUE(table_.AddRange(At(0), 1 << 20, region_).empty());
  EXPECT_TRUE(table_.AddRange(At(4096), 100, region_).empty());
  EXPECT_TRUE(table_.Translate(base_ + (1 << 19) - 10, 20, "key=x").ok());
}

TEST_F(RegionTableTest, RegionLeavesWithItsLastRange) {
  table_.AddRange(At(0), 4096, region_);
  table_.AddRange(At(8192), 4096, region_);
  auto first = table_.RemoveRange(At(0));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->empty());
  EXPECT_EQ(table_.RemoveRange(At(0)).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_FALSE(table_.Translate(base_, 10, "k").ok());
  auto last = table_.RemoveRange(At(8192));
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last->size(), 1u);
  EXPECT_EQ((*last)[0].id, region_);
  EXPECT_TRUE(table_.Regions().empty());
}

TEST_F(RegionTableTest, UnregisteredAndFreedMemoryIsRefused) {
  std::vector<char> heap(64);
  auto st = table_.Translate(heap.data(), heap.size(), "key=h");
  EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(st.status().message().find("register_buffer"), std::string::npos);
  table_.AddRange(At(0), 4096, region_);
  ASSERT_TRUE(alloc_.Free(base_).ok());
  auto freed = table_.Translate(base_, 10, "key=f");
  base_ = nullptr;
  EXPECT_EQ(freed.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(freed.status().message().find("freed"), std::string::npos);
}

}  // namespace
}  // namespace kvpool::client
