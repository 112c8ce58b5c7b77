// ObjectList: the segment host's view of its complete objects, fed by the master's journal.
#include "hosting/object_list.h"

#include <gtest/gtest.h>

namespace kvpool::hosting {
namespace {

rpc::JournalEntry Commit(uint64_t seq, const std::string& key, uint64_t offset, uint64_t size) {
  rpc::JournalEntry e;
  e.set_seq(seq);
  e.set_key(key);
  e.set_offset(offset);
  e.set_size(size);
  e.set_checksum(seq * 11);
  e.set_pin_flags(1);
  return e;
}

rpc::JournalEntry Free(uint64_t seq, uint64_t offset) {
  rpc::JournalEntry e;
  e.set_seq(seq);
  e.set_freed(true);
  e.set_offset(offset);
  return e;
}

std::vector<std::string> Keys(const ObjectList& l) {
  std::vector<std::string> out;
  for (const auto& o : l.Snapshot()) out.push_back(o.key());
  return out;
}

TEST(ObjectListTest, CommitsAndFreesInOrder) {
  ObjectList l;
  rpc::SegmentJournal j;
  *j.add_entries() = Commit(1, "b", 128, 50);
  *j.add_entries() = Commit(2, "a", 0, 100);
  *j.add_entries() = Commit(3, "c", 256, 10);
  *j.add_entries() = Free(4, 128);
  EXPECT_EQ(l.Apply(j), 4u);
  EXPECT_EQ(l.applied_seq(), 4u);
  EXPECT_EQ(Keys(l), (std::vector<std::string>{"a", "c"}));
  auto snap = l.Snapshot();
  EXPECT_EQ(snap[0].offset(), 0u);
  EXPECT_EQ(snap[0].size(), 100u);
  EXPECT_EQ(snap[0].checksum(), 22u);
  EXPECT_EQ(snap[0].pin_flags(), 1u);
  // The same batch delivered again (its reply was lost) changes nothing.
  EXPECT_EQ(l.Apply(j), 0u);
  EXPECT_EQ(l.size(), 2u);
}

TEST(ObjectListTest, ANewerCommitReplacesWhatItOverlaps) {
  ObjectList l;
  rpc::SegmentJournal j;
  *j.add_entries() = Commit(1, "old1", 0, 100);
  *j.add_entries() = Commit(2, "old2", 128, 100);
  *j.add_entries() = Commit(3, "keep", 512, 10);
  *j.add_entries() = Commit(4, "new", 64, 128);  // over the tail of old1 and the head of old2
  l.Apply(j);
  EXPECT_EQ(Keys(l), (std::vector<std::string>{"new", "keep"}));
}

TEST(ObjectListTest, ResetClearsAndSequenceRestarts) {
  ObjectList l;
  rpc::SegmentJournal j;
  *j.add_entries() = Commit(1, "a", 0, 10);
  *j.add_entries() = Commit(2, "b", 64, 10);
  l.Apply(j);
  rpc::SegmentJournal reset;
  reset.set_reset(true);
  *reset.add_entries() = Commit(9, "c", 128, 10);
  l.Apply(reset);
  EXPECT_EQ(Keys(l), (std::vector<std::string>{"c"}));
  EXPECT_EQ(l.applied_seq(), 9u);
  // Re-registered at a new master: same objects, its journal starts at 1.
  l.RestartSequence();
  EXPECT_EQ(l.applied_seq(), 0u);
  rpc::SegmentJournal next;
  *next.add_entries() = Commit(1, "d", 256, 10);
  l.Apply(next);
  EXPECT_EQ(Keys(l), (std::vector<std::string>{"c", "d"}));
  l.Reset();
  EXPECT_EQ(l.size(), 0u);
  EXPECT_EQ(l.applied_seq(), 0u);
}

}  // namespace
}  // namespace kvpool::hosting
