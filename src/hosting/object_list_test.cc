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

constexpr uint64_t kEpoch = 0x5eed;  // the master the lists below are mounted at

// A list open to writes placed by master kEpoch, as after a mount there.
struct OpenList : ObjectList {
  OpenList() { OpenWrites(kEpoch); }
};

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

// An object a WRITE named is listed before the master commits it; journal entries from before
// its range was allocated (an object freed there earlier) do not touch it, later ones do.
TEST(ObjectListTest, AWrittenObjectIsListedAndOutranksOnlyOlderEntries) {
  OpenList l;
  rpc::SegmentJournal old;
  *old.add_entries() = Commit(1, "gone", 0, 100);
  l.Apply(old);
  // The master freed "gone" (seq 2, not delivered yet) and gave [0, 64) to "page" at seq 2.
  l.RecordWrite(0, "page", 64, 77, /*journal_seq=*/2, kEpoch);
  EXPECT_EQ(Keys(l), (std::vector<std::string>{"page"}));  // "gone" was overwritten
  rpc::SegmentJournal late;
  *late.add_entries() = Commit(1, "gone", 0, 100);  // re-delivered: skipped by sequence
  *late.add_entries() = Free(2, 0);                 // frees "gone", not "page"
  l.Apply(late);
  ASSERT_EQ(Keys(l), (std::vector<std::string>{"page"}));
  EXPECT_EQ(l.Snapshot()[0].checksum(), 77u);
  EXPECT_EQ(l.Snapshot()[0].size(), 64u);
  // Its own commit (seq 3) replaces it with the master's record (pins included).
  rpc::SegmentJournal commit;
  *commit.add_entries() = Commit(3, "page", 0, 64);
  l.Apply(commit);
  ASSERT_EQ(Keys(l), (std::vector<std::string>{"page"}));
  EXPECT_EQ(l.Snapshot()[0].pin_flags(), 1u);
  // Later entries free it like any other.
  rpc::SegmentJournal freed;
  *freed.add_entries() = Free(4, 0);
  l.Apply(freed);
  EXPECT_EQ(l.size(), 0u);
}

// A write whose put was given up (never committed) leaves the list when the master frees its
// range, and an older commit overlapping a newer write is dropped, not listed over it.
TEST(ObjectListTest, AnAbandonedWriteLeavesWithItsFree) {
  OpenList l;
  l.RecordWrite(128, "abandoned", 64, 5, /*journal_seq=*/7, kEpoch);
  rpc::SegmentJournal j;
  *j.add_entries() = Commit(6, "older", 100, 100);  // allocated and freed before seq 7
  *j.add_entries() = Free(7, 100);
  l.Apply(j);
  EXPECT_EQ(Keys(l), (std::vector<std::string>{"abandoned"}));
  rpc::SegmentJournal revoked;
  *revoked.add_entries() = Free(8, 128);
  l.Apply(revoked);
  EXPECT_EQ(l.size(), 0u);
}

// At a new master the written objects are listed like the others (they were sent with the
// mount) and the new journal's small sequence numbers replace them as usual.
TEST(ObjectListTest, ARestartedSequenceTreatsWrittenObjectsAsListed) {
  OpenList l;
  l.RecordWrite(0, "page", 64, 5, /*journal_seq=*/500, kEpoch);
  l.RestartSequence();
  rpc::SegmentJournal j;
  *j.add_entries() = Free(1, 0);
  l.Apply(j);
  EXPECT_EQ(l.size(), 0u);
}

// A key removed (or upserted) and put again just before the master went away: the new version
// was listed on write, the FREE of the old one never arrived. Only the newer is re-registered.
TEST(ObjectListTest, OnlyTheNewestVersionOfAKeyIsKept) {
  OpenList l;
  rpc::SegmentJournal j;
  *j.add_entries() = Commit(1, "k", 512, 10);  // old version, its FREE (seq 3) not delivered
  *j.add_entries() = Commit(2, "other", 0, 10);
  l.Apply(j);
  l.RecordWrite(64, "k", 10, 9, /*journal_seq=*/3, kEpoch);    // the new version, allocated after
  l.RecordWrite(1024, "w", 10, 9, /*journal_seq=*/1, kEpoch);  // an older write of "w" ...
  l.RecordWrite(2048, "w", 10, 8, /*journal_seq=*/4, kEpoch);  // ... and its newer one
  EXPECT_EQ(l.DropSuperseded(), 2u);
  auto snap = l.Snapshot();
  ASSERT_EQ(snap.size(), 3u);
  EXPECT_EQ(snap[0].key(), "other");
  EXPECT_EQ(snap[1].key(), "k");
  EXPECT_EQ(snap[1].offset(), 64u);
  EXPECT_EQ(snap[2].key(), "w");
  EXPECT_EQ(snap[2].offset(), 2048u);
  // A commit newer than a write of the same key (that write's put was given up) wins.
  OpenList m;
  m.RecordWrite(0, "k", 10, 9, /*journal_seq=*/2, kEpoch);
  rpc::SegmentJournal later;
  *later.add_entries() = Commit(5, "k", 512, 10);
  m.Apply(later);
  EXPECT_EQ(m.DropSuperseded(), 1u);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.Snapshot()[0].offset(), 512u);
}

// Only the writes of the master the segment is mounted at are listed: not before a mount, not
// while it mounts again (its list already on its way to the new master), not a write placed by
// a master it has left (a leader cut off from the nodes). Their writers wait for an ack instead.
TEST(ObjectListTest, OnlyWritesOfTheMountedMasterAreListed) {
  ObjectList l;
  EXPECT_FALSE(l.RecordWrite(0, "early", 64, 5, 0, kEpoch));
  l.OpenWrites(kEpoch);
  EXPECT_FALSE(l.RecordWrite(0, "other-master", 64, 5, 0, kEpoch + 1));
  EXPECT_TRUE(l.RecordWrite(0, "mine", 64, 5, 0, kEpoch));
  l.CloseWrites();
  EXPECT_FALSE(l.RecordWrite(128, "late", 64, 5, 0, kEpoch));
  EXPECT_EQ(Keys(l), (std::vector<std::string>{"mine"}));
}

}  // namespace
}  // namespace kvpool::hosting
