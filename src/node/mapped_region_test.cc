// The node maps only what cannot make it fault: a sealed memfd at least as large as claimed.
#include "node/mapped_region.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "client/standalone/host_memory_registry.h"
#include "kvpool/host_allocator.h"

namespace kvpool::node {
namespace {

TEST(MappedRegionTest, MapsAHostAllocationAndSharesItsPages) {
  HostMemAllocator a;
  auto p = a.Alloc(1 << 16);
  ASSERT_TRUE(p.ok());
  auto found = client::HostMemoryRegistry::Instance().Find(*p, 1 << 16);
  ASSERT_TRUE(found.ok());
  auto region = MappedRegion::Map(found->fd.get(), 1 << 16, false);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  std::memcpy((*region)->base() + 100, "node", 4);
  EXPECT_EQ(std::memcmp(static_cast<char*>(*p) + 100, "node", 4), 0);
  EXPECT_TRUE(a.Free(*p).ok());
  // The node's mapping outlives the client's.
  EXPECT_EQ(std::memcmp((*region)->base() + 100, "node", 4), 0);
}

TEST(MappedRegionTest, RefusesWhatCouldFault) {
  int unsealed = memfd_create("t", MFD_CLOEXEC);
  ASSERT_EQ(ftruncate(unsealed, 4096), 0);
  auto r = MappedRegion::Map(unsealed, 4096, false);
  EXPECT_EQ(r.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(r.status().message().find("sealed"), std::string::npos);
  close(unsealed);

  int sealed = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(sealed, 4096), 0);
  ASSERT_EQ(fcntl(sealed, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  EXPECT_EQ(MappedRegion::Map(sealed, 8192, false).code(), ErrorCode::INVALID_PARAMS);  // small
  EXPECT_EQ(MappedRegion::Map(sealed, 0, false).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_TRUE(MappedRegion::Map(sealed, 4096, true).ok());
  close(sealed);

  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  EXPECT_EQ(MappedRegion::Map(pipefd[0], 4096, false).code(), ErrorCode::INVALID_PARAMS);
  close(pipefd[0]);
  close(pipefd[1]);
}

}  // namespace
}  // namespace kvpool::node
