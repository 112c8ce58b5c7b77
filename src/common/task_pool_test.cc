#include "common/task_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace kvpool {
namespace {

TEST(TaskPoolTest, RunsEveryPartOnce) {
  for (int threads : {0, 1, 3}) {
    TaskPool pool(threads);
    for (size_t n : {0, 1, 2, 7, 100}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, [&](size_t i) { ++hits[i]; });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << threads << " " << n;
    }
  }
}

}  // namespace
}  // namespace kvpool
