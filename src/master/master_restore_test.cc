// MasterCore across a restart: journals in ping replies, the rebuild from re-registered object
// lists, and draining segments.
#include <gtest/gtest.h>

#include "master/master_test_util.h"

namespace kvpool::master {
namespace {

using testing::Code;
using testing::CoreTest;
using testing::kT0;

class RestoreTest : public CoreTest {
 protected:
  // A long-poll-less ping from `client` acking `applied` on segment `name`.
  rpc::PingReply PingAck(const std::string& client, const std::string& name, uint64_t applied) {
    rpc::Ping p;
    p.set_client_id(client);
    rpc::JournalAck* a = p.add_journal_acks();
    a->set_segment_name(name);
    a->set_applied_seq(applied);
    auto r = core_.Ping(p, kT0);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : rpc::PingReply();
  }
  static rpc::StoredObject Stored(const std::string& key, uint64_t offset, uint64_t size) {
    rpc::StoredObject o;
    o.set_key(key);
    o.set_offset(offset);
    o.set_size(size);
    return o;
  }
  rpc::MountSegmentReply MountWith(MasterCore& core, const std::string& client,
                                   const std::string& name,
                                   const std::vector<rpc::StoredObject>& objects,
                                   bool more = false) {
    rpc::MountSegment m;
    m.set_client_id(client);
    m.set_segment_name(name);
    m.set_endpoint("127.0.0.1:9001");
    m.set_size(kSeg);
    for (auto& o : objects) *m.add_objects() = o;
    m.set_more_objects(more);
    auto r = core.MountSegment(m, kT0);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : rpc::MountSegmentReply();
  }
};

TEST_F(RestoreTest, CommitsAndFreesReachTheHostInOrder) {
  Mount("node1", "n1");
  Ping("node1", kT0);
  PutComplete("w", "a", 100);
  PutComplete("w", "b", 200);
  ASSERT_EQ(Remove1("a"), ErrorCode::OK);
  rpc::Ping p;
  p.set_client_id("node1");
  p.add_journal_acks()->set_segment_name("n1");
  EXPECT_TRUE(core_.JournalReady(p));
  auto r = PingAck("node1", "n1", 0);
  ASSERT_EQ(r.journals_size(), 1);
  const auto& j = r.journals(0);
  EXPECT_EQ(j.segment_name(), "n1");
  ASSERT_EQ(j.entries_size(), 3);
  EXPECT_EQ(j.entries(0).key(), "a");
  EXPECT_EQ(j.entries(1).key(), "b");
  EXPECT_TRUE(j.entries(2).freed());
  EXPECT_EQ(j.entries(2).offset(), j.entries(0).offset());
  // Acked: nothing more, and a pending put is not journaled until it commits.
  ASSERT_EQ(Put1("w", "c", 10).code(), 0);
  EXPECT_EQ(PingAck("node1", "n1", 3).journals_size(), 0);
  p.mutable_journal_acks(0)->set_applied_seq(3);
  EXPECT_FALSE(core_.JournalReady(p));
  p.set_client_id("other");  // not its segment: the ping must answer at once
  EXPECT_TRUE(core_.JournalReady(p));
  // Another client's ack for this segment is ignored.
  EXPECT_EQ(PingAck("other", "n1", 0).journals_size(), 0);
}

TEST_F(RestoreTest, RestartedMasterRebuildsObjectsFromTheList) {
  Mount("node1", "n1");
  PutComplete("w", "a", 100);
  PutComplete("w", "b", 5000);
  auto before_a = Get1("a");
  auto before_b = Get1("b");
  // A new master process: the host re-registers with what its journal taught it.
  MasterCore fresh(options_, 43);
  auto r = MountWith(fresh, "node1", "n1",
                     {Stored("a", before_a.replicas(0).offset(), 100),
                      Stored("b", before_b.replicas(0).offset(), 5000)});
  EXPECT_EQ(r.objects_restored(), 2u);
  EXPECT_EQ(r.master_epoch(), 43u);
  rpc::KeysRequest k = Keys({"a", "b", "zzz"});
  auto loc = fresh.GetReplicaList(k, kT0);
  ASSERT_EQ(loc.objects(0).code(), 0);
  EXPECT_EQ(loc.objects(0).replicas(0).offset(), before_a.replicas(0).offset());
  EXPECT_EQ(loc.objects(1).replicas(0).offset(), before_b.replicas(0).offset());
  EXPECT_EQ(loc.objects(1).size(), 5000u);
  EXPECT_EQ(Code(loc.objects(2).code()), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(fresh.Stat().used(), core_.Stat().used());
  // New puts never land on a restored range.
  rpc::PutStart p;
  p.set_client_id("w2");
  for (int i = 0; i < 50; ++i) {
    auto* item = p.add_items();
    item->set_key("n" + std::to_string(i));
    item->set_size(1000);
  }
  auto put = fresh.PutStart(p, kT0);
  ASSERT_TRUE(put.ok());
  for (const auto& res : put->results()) {
    ASSERT_EQ(res.code(), 0);
    uint64_t off = res.replicas(0).offset();
    EXPECT_TRUE(off + 1000 <= before_a.replicas(0).offset() ||
                off >= before_a.replicas(0).offset() + 100);
    EXPECT_TRUE(off + 1000 <= before_b.replicas(0).offset() ||
                off >= before_b.replicas(0).offset() + 5000);
  }
}

TEST_F(RestoreTest, BadAndOverlappingEntriesAreDropped) {
  MasterCore fresh(options_, 43);
  auto r = MountWith(fresh, "node1", "n1",
                     {Stored("a", 0, 100), Stored("overlap", 64, 100), Stored("", 4096, 10),
                      Stored("unaligned", 4097, 10), Stored("outside", kSeg, 10),
                      Stored("zero", 8192, 0), Stored("c", 16384, 10)});
  EXPECT_EQ(r.objects_restored(), 2u);
  rpc::KeysRequest k = Keys({"a", "overlap", "c"});
  auto loc = fresh.GetReplicaList(k, kT0);
  EXPECT_EQ(loc.objects(0).code(), 0);
  EXPECT_EQ(Code(loc.objects(1).code()), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(loc.objects(2).code(), 0);
}

TEST_F(RestoreTest, AKeyKnownAlreadyIsNotDuplicated) {
  MasterCore fresh(options_, 43);
  EXPECT_EQ(MountWith(fresh, "node1", "n1", {Stored("a", 0, 100)}).objects_restored(), 1u);
  auto r = MountWith(fresh, "node2", "n2", {Stored("a", 0, 100), Stored("b", 128, 10)});
  EXPECT_EQ(r.objects_restored(), 1u);
  // The refused copy's range was freed, and the host hears so through its journal.
  rpc::Ping p;
  p.set_client_id("node2");
  p.add_journal_acks()->set_segment_name("n2");
  auto reply = fresh.Ping(p, kT0);
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->journals_size(), 1);
  ASSERT_EQ(reply->journals(0).entries_size(), 1);
  EXPECT_TRUE(reply->journals(0).entries(0).freed());
  EXPECT_EQ(reply->journals(0).entries(0).offset(), 0u);
}

TEST_F(RestoreTest, CopiesWithTheSameChecksumJoinAsReplicas) {
  MasterCore fresh(options_, 43);
  auto a = Stored("a", 0, 100);
  a.set_checksum(777);
  auto b = Stored("b", 0, 100);
  b.set_checksum(5);
  EXPECT_EQ(MountWith(fresh, "node1", "n1", {a, b}).objects_restored(), 1u);  // b overlaps a
  auto b2 = b;
  b2.set_offset(4096);
  auto a_other = a;
  a_other.set_offset(128);
  auto a_stale = Stored("a", 0, 100);
  a_stale.set_checksum(778);  // other bytes under the same key: never joins
  EXPECT_EQ(MountWith(fresh, "node2", "n2", {a_other}).objects_restored(), 1u);
  EXPECT_EQ(MountWith(fresh, "node3", "n3", {a_stale, b2}).objects_restored(), 1u);
  auto loc = fresh.GetReplicaList(Keys({"a"}), kT0);
  ASSERT_EQ(loc.objects(0).code(), 0);
  EXPECT_EQ(loc.objects(0).replicas_size(), 2);
  EXPECT_EQ(loc.objects(0).checksum(), 777u);
}

TEST_F(RestoreTest, ChunkedListOpensTheSegmentOnlyAtTheEnd) {
  MasterCore fresh(options_, 43);
  EXPECT_EQ(
      MountWith(fresh, "node1", "n1", {Stored("a", 0, 100)}, /*more=*/true).objects_restored(), 0u);
  rpc::PutStart p;
  p.set_client_id("w");
  auto* item = p.add_items();
  item->set_key("new");
  item->set_size(10);
  EXPECT_EQ(Code(fresh.PutStart(p, kT0)->results(0).code()), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(MountWith(fresh, "node1", "n1", {Stored("b", 4096, 100)}).objects_restored(), 2u);
  auto put = fresh.PutStart(p, kT0);
  ASSERT_EQ(put->results(0).code(), 0);
  EXPECT_GE(put->results(0).replicas(0).offset(), 128u);
}

TEST_F(RestoreTest, DrainingSegmentTakesNoNewReplicas) {
  Mount("node1", "n1");
  Mount("node2", "n2");
  PutComplete("w", "before", 100);
  ASSERT_TRUE(core_.SetDraining("n1", true).ok());
  EXPECT_EQ(core_.SetDraining("nope", true).code(), ErrorCode::SEGMENT_NOT_FOUND);
  for (int i = 0; i < 20; ++i) {
    auto r = Put1("w", "k" + std::to_string(i), 100);
    ASSERT_EQ(r.code(), 0);
    EXPECT_EQ(r.replicas(0).segment_name(), "n2");
  }
  EXPECT_EQ(Get1("before").code(), 0);  // what is there stays readable
  ASSERT_TRUE(core_.SetDraining("n1", false).ok());
}

TEST_F(RestoreTest, PutsFindingNoAcceptingSegmentEvictNothing) {
  Mount("node1", "n1");
  PutComplete("w", "kept", 100);
  ASSERT_TRUE(core_.SetDraining("n1", true).ok());  // like a segment still being restored
  auto r = Put1("w", "new", 100);
  EXPECT_EQ(r.code(), static_cast<int32_t>(ErrorCode::NO_AVAILABLE_HANDLE));
  EXPECT_NE(r.message().find("no segment takes new replicas"), std::string::npos) << r.message();
  EXPECT_EQ(Get1("kept").code(), 0);  // not evicted to make room that no put could use
  EXPECT_EQ(core_.Stat().evicted_total(), 0u);
}

}  // namespace
}  // namespace kvpool::master
