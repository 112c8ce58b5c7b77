#include "common/deadline_mutex.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace kvpool {
namespace {

using std::chrono::milliseconds;

TEST(DeadlineMutexTest, GivesUpAtTheDeadlineWhileHeldThenSucceedsWhenFree) {
  DeadlineMutex mu;
  std::unique_lock<DeadlineMutex> held(mu);
  std::thread other([&] {
    const auto start = Clock::now();
    std::unique_lock<DeadlineMutex> l(mu, std::defer_lock);
    EXPECT_FALSE(l.try_lock_until(DeadlineAfter(milliseconds(50))));
    EXPECT_GE(Clock::now() - start, milliseconds(50));
    EXPECT_FALSE(mu.try_lock());
  });
  other.join();
  held.unlock();
  std::unique_lock<DeadlineMutex> l(mu, std::defer_lock);
  EXPECT_TRUE(l.try_lock_until(DeadlineAfter(milliseconds(50))));
}

TEST(DeadlineMutexTest, ExcludesAcrossThreads) {
  DeadlineMutex mu;
  int64_t counter = 0;  // guarded by mu: a lost update means two holders at once
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        if (t % 2 == 0) {
          std::lock_guard<DeadlineMutex> l(mu);
          ++counter;
        } else {
          std::unique_lock<DeadlineMutex> l(mu, std::defer_lock);
          ASSERT_TRUE(l.try_lock_until(DeadlineAfter(std::chrono::seconds(30))));
          ++counter;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(counter, 8000);
}

}  // namespace
}  // namespace kvpool
