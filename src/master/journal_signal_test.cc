// JournalSignal: wakers run once per Notify, unsubscribed ones never.
#include "master/journal_signal.h"

#include <gtest/gtest.h>

namespace kvpool::master {
namespace {

TEST(JournalSignalTest, NotifyRunsEachSubscribedWakerOnce) {
  JournalSignal signal;
  signal.Notify();  // nobody waits: nothing happens
  int a = 0, b = 0, c = 0;
  signal.Subscribe([&] { ++a; });
  uint64_t second = signal.Subscribe([&] { ++b; });
  signal.Subscribe([&] { ++c; });
  signal.Unsubscribe(second);
  signal.Notify();
  signal.Notify();  // already run: not again
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 0);
  EXPECT_EQ(c, 1);
  signal.Unsubscribe(second);  // unknown id: a no-op
}

}  // namespace
}  // namespace kvpool::master
