// SegmentJournal: order, acknowledgement, bounded batches and the overflow reset.
#include "master/segment_journal.h"

#include <gtest/gtest.h>

namespace kvpool::master {
namespace {

TEST(SegmentJournalTest, HandsOutEntriesInOrderAfterTheAck) {
  SegmentJournal j;
  EXPECT_FALSE(j.HasAfter(0));
  j.AppendCommit(0, 100, "a", 7, 1);
  j.AppendCommit(128, 50, "b", 0, 0);
  j.AppendFree(0, 100);
  EXPECT_EQ(j.last_seq(), 3u);
  EXPECT_TRUE(j.HasAfter(0));
  rpc::SegmentJournal out;
  EXPECT_EQ(j.Collect(0, 100, &out), 3u);
  ASSERT_EQ(out.entries_size(), 3);
  EXPECT_FALSE(out.reset());
  EXPECT_EQ(out.entries(0).seq(), 1u);
  EXPECT_EQ(out.entries(0).key(), "a");
  EXPECT_EQ(out.entries(0).checksum(), 7u);
  EXPECT_EQ(out.entries(0).pin_flags(), 1u);
  EXPECT_FALSE(out.entries(0).freed());
  EXPECT_EQ(out.entries(1).offset(), 128u);
  EXPECT_TRUE(out.entries(2).freed());
  EXPECT_EQ(out.entries(2).offset(), 0u);

  j.Ack(2);
  EXPECT_EQ(j.size(), 1u);
  EXPECT_TRUE(j.HasAfter(2));
  EXPECT_FALSE(j.HasAfter(3));
  rpc::SegmentJournal rest;
  EXPECT_EQ(j.Collect(2, 100, &rest), 1u);
  EXPECT_EQ(rest.entries(0).seq(), 3u);
  j.Ack(99);  // beyond the last: everything
  EXPECT_EQ(j.size(), 0u);
  EXPECT_FALSE(j.HasAfter(3));
}

TEST(SegmentJournalTest, BatchesAreBounded) {
  SegmentJournal j;
  for (int i = 0; i < 10; ++i) j.AppendFree(i * 64, 64);
  rpc::SegmentJournal out;
  EXPECT_EQ(j.Collect(0, 4, &out), 4u);
  EXPECT_EQ(out.entries(3).seq(), 4u);
  rpc::SegmentJournal next;
  EXPECT_EQ(j.Collect(4, 4, &next), 4u);
  EXPECT_EQ(next.entries(0).seq(), 5u);
}

TEST(SegmentJournalTest, OverflowResetsTheHostsList) {
  SegmentJournal j(/*capacity=*/3);
  for (int i = 0; i < 4; ++i) j.AppendCommit(i * 64, 10, "k" + std::to_string(i), 0, 0);
  // The fourth entry overflowed: the first three are gone and the host must clear its list.
  EXPECT_EQ(j.size(), 1u);
  rpc::SegmentJournal out;
  EXPECT_EQ(j.Collect(1, 100, &out), 1u);
  EXPECT_TRUE(out.reset());
  EXPECT_EQ(out.entries(0).seq(), 4u);
  EXPECT_EQ(out.entries(0).key(), "k3");
  j.Ack(4);
  EXPECT_FALSE(j.HasAfter(4));
  rpc::SegmentJournal after;
  j.Collect(4, 100, &after);
  EXPECT_FALSE(after.reset());
  EXPECT_EQ(after.entries_size(), 0);
}

}  // namespace
}  // namespace kvpool::master
