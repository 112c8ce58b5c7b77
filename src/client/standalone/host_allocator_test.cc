// HostMemAllocator and the process-wide registry: every documented error, and what the node
// relies on (page alignment, a sealed memfd behind every allocation, ranges found inside one).
#include "kvpool/host_allocator.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "client/standalone/host_memory_registry.h"

namespace kvpool {
namespace {

using client::HostMemoryRegistry;

TEST(HostAllocatorTest, AllocIsAlignedZeroedWritableAndFreed) {
  HostMemAllocator a;
  const size_t before = HostMemoryRegistry::Instance().count();
  auto p = a.Alloc(10000);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % sysconf(_SC_PAGESIZE), 0u);
  auto* bytes = static_cast<uint8_t*>(*p);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[9999], 0);
  std::memset(bytes, 0xab, 10000);
  EXPECT_EQ(HostMemoryRegistry::Instance().count(), before + 1);
  EXPECT_TRUE(a.Free(*p).ok());
  EXPECT_EQ(HostMemoryRegistry::Instance().count(), before);
}

TEST(HostAllocatorTest, Errors) {
  HostMemAllocator a;
  EXPECT_EQ(a.Alloc(0).code(), ErrorCode::INVALID_PARAMS);
  auto huge = a.Alloc(size_t{1} << 50);  // 1 PiB
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.code(), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_NE(huge.status().message().find("MemAvailable"), std::string::npos)
      << huge.status().ToString();
  auto p = a.Alloc(4096);
  ASSERT_TRUE(p.ok());
  // Not the start of an allocation, twice, foreign, null: INVALID_PARAMS and nothing happens.
  EXPECT_EQ(a.Free(static_cast<char*>(*p) + 8).code(), ErrorCode::INVALID_PARAMS);
  int local = 0;
  EXPECT_EQ(a.Free(&local).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(a.Free(nullptr).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_TRUE(a.Free(*p).ok());
  Status again = a.Free(*p);
  EXPECT_EQ(again.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(again.message().find("not the start of a live"), std::string::npos);
}

TEST(HostAllocatorTest, HugePagesWithoutReservationFailClearly) {
  std::ifstream in("/proc/sys/vm/nr_hugepages");
  long reserved = 0;
  in >> reserved;
  if (reserved > 0) GTEST_SKIP() << "huge pages are reserved on this machine";
  HostAllocatorOptions o;
  o.huge_pages = true;
  auto p = HostMemAllocator(o).Alloc(4 << 20);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.code(), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_NE(p.status().message().find("nr_hugepages"), std::string::npos);
}

TEST(HostAllocatorTest, PrefaultedAllocationWorks) {
  HostAllocatorOptions o;
  o.prefault = true;
  HostMemAllocator a(o);
  auto p = a.Alloc(1 << 20);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  static_cast<char*>(*p)[(1 << 20) - 1] = 1;
  EXPECT_TRUE(a.Free(*p).ok());
}

TEST(HostAllocatorTest, EveryInstanceSharesOneRegistry) {
  auto p = HostMemAllocator().Alloc(8192);
  ASSERT_TRUE(p.ok());
  auto found = HostMemoryRegistry::Instance().Find(*p, 8192);
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(HostMemAllocator().Free(*p).ok());  // freed through another handle
  EXPECT_FALSE(HostMemoryRegistry::Instance().Find(*p, 1).ok());
  EXPECT_FALSE(HostMemoryRegistry::Instance().IsLive(found->allocation.id, found->allocation.base));
}

TEST(HostAllocatorTest, FindWholePartStraddleAndForeign) {
  HostMemAllocator a;
  auto p = a.Alloc(1 << 20);
  auto q = a.Alloc(1 << 20);
  ASSERT_TRUE(p.ok() && q.ok());
  auto* base = static_cast<char*>(*p);
  auto& reg = HostMemoryRegistry::Instance();
  auto whole = reg.Find(base, 1 << 20);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->allocation.base, reinterpret_cast<uintptr_t>(base));
  EXPECT_EQ(whole->allocation.size, 1u << 20);
  auto half = reg.Find(base + (1 << 19), 1 << 19);  // the V half
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->allocation.id, whole->allocation.id);
  // The descriptor the node gets: sealed against shrinking, as large as the allocation.
  int seals = fcntl(half->fd.get(), F_GET_SEALS);
  EXPECT_NE(seals & F_SEAL_SHRINK, 0);
  EXPECT_NE(ftruncate(half->fd.get(), 4096), 0);
  auto past = reg.Find(base + (1 << 20) - 10, 20);
  EXPECT_EQ(past.code(), ErrorCode::UNAVAILABLE_IN_CURRENT_MODE);
  EXPECT_NE(past.status().message().find("10 bytes past its end"), std::string::npos)
      << past.status().ToString();
  std::vector<char> heap(100);
  auto foreign = reg.Find(heap.data(), heap.size());
  EXPECT_EQ(foreign.code(), ErrorCode::UNAVAILABLE_IN_CURRENT_MODE);
  EXPECT_NE(foreign.status().message().find("no HostMemAllocator allocation contains"),
            std::string::npos);
  EXPECT_TRUE(a.Free(*p).ok());
  EXPECT_TRUE(a.Free(*q).ok());
}

TEST(HostAllocatorTest, ConcurrentAllocFree) {
  const size_t before = HostMemoryRegistry::Instance().count();
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      HostMemAllocator a;
      for (int i = 0; i < 50; ++i) {
        auto p = a.Alloc(4096 * (1 + i % 3));
        ASSERT_TRUE(p.ok());
        static_cast<char*>(*p)[0] = 1;
        ASSERT_TRUE(HostMemoryRegistry::Instance().Find(*p, 4096).ok());
        ASSERT_TRUE(a.Free(*p).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(HostMemoryRegistry::Instance().count(), before);
}

}  // namespace
}  // namespace kvpool
