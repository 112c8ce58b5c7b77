// The master's side of the disk tier: disk segments take no placements, replicas their hosts
// report (TIER_UPDATE) are listed after DRAM ones and keep an object through DRAM eviction.
#include <gtest/gtest.h>

#include "master/master_test_util.h"

namespace kvpool::master {
namespace {

using testing::At;
using testing::Code;
using testing::kT0;

constexpr uint64_t kTierObj = 64 << 10;

class TierTest : public testing::CoreTest {
 protected:
  void SetUp() override {
    dram_ = Mount("node", "dram", kSeg);
    rpc::MountSegment m;
    m.set_client_id("node");
    m.set_segment_name("dram#disk");
    m.set_endpoint("127.0.0.1:9004");
    m.set_size(4 * kSeg);
    m.set_tier(rpc::TIER_DISK);
    auto r = core_.MountSegment(m, kT0);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    disk_ = r->segment_id();
  }
  // Puts and commits `key` with checksum `sum`.
  void PutSummed(const std::string& key, uint64_t sum, Clock::time_point now = kT0) {
    auto r = Put1("writer", key, kTierObj, now);
    ASSERT_EQ(r.code(), 0) << r.message();
    rpc::PutEnd p;
    p.set_client_id("writer");
    p.add_commit_keys(key);
    p.add_commit_checksums(sum);
    auto e = core_.PutEnd(p, now);
    ASSERT_TRUE(e.ok());
    ASSERT_EQ(e->codes(0), 0);
  }
  static rpc::StoredObject Obj(const std::string& key, uint64_t offset, uint64_t sum,
                               uint64_t size = kTierObj) {
    rpc::StoredObject o;
    o.set_key(key);
    o.set_offset(offset);
    o.set_size(size);
    o.set_checksum(sum);
    return o;
  }
  rpc::CodesReply Update(const std::vector<rpc::StoredObject>& added,
                         const std::vector<rpc::StoredObject>& dropped = {},
                         const std::string& client = "node",
                         const std::string& segment = "dram#disk", Clock::time_point now = kT0) {
    rpc::TierUpdate u;
    u.set_client_id(client);
    u.set_segment_name(segment);
    for (auto& o : added) *u.add_added() = o;
    for (auto& o : dropped) *u.add_dropped() = o;
    auto r = core_.TierUpdate(u, now);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : rpc::CodesReply();
  }
  uint64_t dram_ = 0, disk_ = 0;
};

TEST_F(TierTest, DiskSegmentTakesNoPlacementsAndIsCountedApart) {
  for (int i = 0; i < 8; ++i) {
    auto r = Put1("writer", "k" + std::to_string(i), kTierObj);
    ASSERT_EQ(r.code(), 0);
    ASSERT_EQ(r.replicas_size(), 1);
    EXPECT_EQ(r.replicas(0).segment_name(), "dram");
  }
  // Not even when a writer names it.
  rpc::ReplicateConfig cfg;
  cfg.add_preferred_segments("dram#disk");
  auto r = Put1("writer", "pref", kTierObj, kT0, false, cfg);
  ASSERT_EQ(r.code(), 0);
  EXPECT_EQ(r.replicas(0).segment_name(), "dram");
  rpc::StatReply st = core_.Stat();
  EXPECT_EQ(st.capacity(), kSeg);
  EXPECT_EQ(st.disk_capacity(), 4 * kSeg);
  bool saw_disk = false;
  for (const auto& s : st.segments()) {
    if (s.segment_name() == "dram#disk") {
      saw_disk = true;
      EXPECT_EQ(s.tier(), static_cast<uint32_t>(rpc::TIER_DISK));
    }
  }
  EXPECT_TRUE(saw_disk);
}

TEST_F(TierTest, DiskReplicaIsListedAfterDramAndKeepsTheObjectThroughEviction) {
  PutSummed("hot", 77);
  auto codes = Update({Obj("hot", 8192, 77)});
  ASSERT_EQ(Code(codes.codes(0)), ErrorCode::OK);
  rpc::ObjectLocation loc = Get1("hot", kT0, /*no_lease=*/true);
  ASSERT_EQ(loc.replicas_size(), 2);
  EXPECT_EQ(loc.replicas(0).segment_name(), "dram");
  EXPECT_EQ(loc.replicas(0).tier(), 0u);
  EXPECT_EQ(loc.replicas(1).segment_name(), "dram#disk");
  EXPECT_EQ(loc.replicas(1).tier(), static_cast<uint32_t>(rpc::TIER_DISK));
  EXPECT_EQ(loc.replicas(1).offset(), 8192u);
  EXPECT_EQ(core_.Stat().disk_replicas(), 1u);
  // Fill DRAM well past its size: "hot" is the oldest and goes from DRAM, not from the pool.
  for (int i = 0; i < 40; ++i) PutSummed("fill" + std::to_string(i), 100 + i, At(1 + i));
  EXPECT_EQ(Exists1("hot"), 1);
  loc = Get1("hot", At(50), /*no_lease=*/true);
  ASSERT_EQ(loc.code(), 0);
  ASSERT_EQ(loc.replicas_size(), 1);
  EXPECT_EQ(loc.replicas(0).segment_name(), "dram#disk");
  EXPECT_EQ(loc.checksum(), 77u);
  EXPECT_GE(core_.demoted_total(), 1u);
  // The prefix query counts it too.
  auto pre = core_.ExistsPrefix(Keys({"hot", "fill39", "nope"}), At(50));
  EXPECT_EQ(pre.count(), 2u);
  // Objects only on disk are never evicted by the master: more fills leave it there.
  for (int i = 40; i < 60; ++i) PutSummed("fill" + std::to_string(i), 100 + i, At(51 + i));
  EXPECT_EQ(Exists1("hot"), 1);
}

// An object already on disk is evicted (demoted: still readable) before an older one that is
// not: evicting that one would lose it.
TEST_F(TierTest, EvictionDemotesObjectsOnDiskBeforeDroppingOlderOnesThatAreNot) {
  PutSummed("old-dram-only", 1, At(1));
  PutSummed("newer-on-disk", 2, At(2));
  ASSERT_EQ(Code(Update({Obj("newer-on-disk", 0, 2)}).codes(0)), ErrorCode::OK);
  for (int i = 0; i < 14; ++i) PutSummed("fill" + std::to_string(i), 100 + i, At(3 + i));
  PutSummed("one-more", 9, At(50));  // the segment (16 objects) is full: one must go
  EXPECT_EQ(Exists1("old-dram-only"), 1);
  rpc::ObjectLocation loc = Get1("newer-on-disk", At(51), /*no_lease=*/true);
  ASSERT_EQ(loc.replicas_size(), 1);
  EXPECT_EQ(loc.replicas(0).tier(), static_cast<uint32_t>(rpc::TIER_DISK));
  EXPECT_EQ(Get1("old-dram-only", At(51), true).replicas(0).tier(), 0u);
  EXPECT_EQ(core_.demoted_total(), 1u);
}

// A segment full of objects whose copy to its disk tier is pending: a put is refused with
// offload_pending (the client asks again) instead of evicting one, which would lose it; once
// one is on disk it is demoted to make room; past disk_offload_wait (10 s) the rest may go.
TEST_F(TierTest, ObjectsWaitingForTheirDiskCopyAreSparedForAWhile) {
  for (int i = 0; i < 16; ++i) PutSummed("wait" + std::to_string(i), 100 + i, At(1 + 0.1 * i));
  rpc::PutStartResult refused = Put1("writer", "one-more", kTierObj, At(3));
  EXPECT_EQ(Code(refused.code()), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_TRUE(refused.offload_pending()) << refused.message();
  EXPECT_NE(refused.message().find("disk tier"), std::string::npos) << refused.message();
  EXPECT_EQ(core_.Stat().refused_offload_pending(), 1u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(Exists1("wait" + std::to_string(i)), 1);
  // wait5 reached the disk: it is demoted, the put finds room.
  ASSERT_EQ(Code(Update({Obj("wait5", 0, 105)}, {}, "node", "dram#disk", At(3)).codes(0)),
            ErrorCode::OK);
  rpc::PutStartResult placed = Put1("writer", "one-more", kTierObj, At(3.5));
  EXPECT_EQ(placed.code(), 0) << placed.message();
  EXPECT_FALSE(placed.offload_pending());
  EXPECT_EQ(Get1("wait5", At(3.5), /*no_lease=*/true).replicas(0).tier(),
            static_cast<uint32_t>(rpc::TIER_DISK));
  // Past the wait, an object that never reached the disk is evicted as before.
  rpc::PutStartResult late = Put1("writer", "later", kTierObj, At(13));
  EXPECT_EQ(late.code(), 0) << late.message();
  EXPECT_EQ(core_.Stat().refused_offload_pending(), 1u);
}

TEST_F(TierTest, AddsThatCannotBeTrustedAreRefused) {
  PutSummed("a", 5);
  auto c = Update({Obj("a", 0, 6), Obj("a", 0, 5, kTierObj + 1), Obj("missing", 0, 5),
                   Obj("a", 4096, 5), Obj("a", 8192, 5)});
  EXPECT_EQ(Code(c.codes(0)), ErrorCode::INVALID_PARAMS);  // another checksum
  EXPECT_EQ(Code(c.codes(1)), ErrorCode::INVALID_PARAMS);  // another size
  EXPECT_EQ(Code(c.codes(2)), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Code(c.codes(3)), ErrorCode::OK);
  EXPECT_EQ(Code(c.codes(4)), ErrorCode::OBJECT_ALREADY_EXISTS);  // one per disk segment
  // A pending object is not there yet.
  ASSERT_EQ(Put1("writer", "pending", kTierObj).code(), 0);
  EXPECT_EQ(Code(Update({Obj("pending", 0, 1)}).codes(0)), ErrorCode::OBJECT_NOT_FOUND);
  // A held object (a reader's lease) waits for a retry.
  PutSummed("read", 9);
  auto held = Get1("read");
  ASSERT_EQ(held.code(), 0);
  EXPECT_EQ(Code(Update({Obj("read", 65536, 9)}).codes(0)), ErrorCode::OBJECT_HAS_LEASE);
  // Only the disk segment's own client, and only on a disk segment.
  rpc::TierUpdate u;
  u.set_client_id("other");
  u.set_segment_name("dram#disk");
  EXPECT_EQ(core_.TierUpdate(u, kT0).code(), ErrorCode::ILLEGAL_CLIENT);
  u.set_client_id("node");
  u.set_segment_name("dram");
  EXPECT_EQ(core_.TierUpdate(u, kT0).code(), ErrorCode::ILLEGAL_CLIENT);
  u.set_segment_name("none");
  EXPECT_EQ(core_.TierUpdate(u, kT0).code(), ErrorCode::SEGMENT_NOT_FOUND);
}

TEST_F(TierTest, AddsOutsideTheDiskSegmentAreRefused) {
  PutSummed("a", 5);
  const uint64_t cap = 4 * kSeg;
  auto c = Update({Obj("a", cap, 5), Obj("a", cap - kTierObj / 2, 5),
                   Obj("a", ~uint64_t{0} - 63, 5), Obj("a", 100, 5), Obj("a", cap - kTierObj, 5)});
  EXPECT_EQ(Code(c.codes(0)), ErrorCode::INVALID_PARAMS);  // at the end
  EXPECT_EQ(Code(c.codes(1)), ErrorCode::INVALID_PARAMS);  // runs past the end
  EXPECT_EQ(Code(c.codes(2)), ErrorCode::INVALID_PARAMS);  // offset + size wraps around
  EXPECT_EQ(Code(c.codes(3)), ErrorCode::INVALID_PARAMS);  // not aligned
  EXPECT_EQ(Code(c.codes(4)), ErrorCode::OK);              // the last range that fits
  rpc::ObjectLocation loc = Get1("a", kT0, /*no_lease=*/true);
  ASSERT_EQ(loc.replicas_size(), 2);
  EXPECT_EQ(loc.replicas(1).offset(), cap - kTierObj);
}

TEST_F(TierTest, DropsUnlistTheDiskReplicaUnlessARead) {
  PutSummed("a", 5);
  PutSummed("b", 6);
  ASSERT_EQ(Update({Obj("a", 0, 5), Obj("b", 65536, 6)}).codes(1), 0);
  auto lease = Get1("a");  // a reader holds "a"
  ASSERT_EQ(lease.code(), 0);
  auto c = Update({}, {Obj("a", 0, 5), Obj("b", 65536, 6), Obj("b", 4096, 6), Obj("zz", 0, 1)});
  EXPECT_EQ(Code(c.codes(0)), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(Code(c.codes(1)), ErrorCode::OK);
  EXPECT_EQ(Code(c.codes(2)), ErrorCode::OBJECT_NOT_FOUND);  // not at that offset
  EXPECT_EQ(Code(c.codes(3)), ErrorCode::OBJECT_NOT_FOUND);
  // "b" keeps its DRAM replica.
  auto loc = Get1("b", kT0, true);
  ASSERT_EQ(loc.replicas_size(), 1);
  EXPECT_EQ(loc.replicas(0).segment_name(), "dram");
  EXPECT_EQ(core_.Stat().disk_replicas(), 1u);
}

TEST_F(TierTest, DroppingTheOnlyCopyRemovesTheObjectAndRemoveJournalsTheDiskFree) {
  PutSummed("solo", 5);
  ASSERT_EQ(Update({Obj("solo", 0, 5)}).codes(0), 0);
  PutSummed("gone", 6);
  ASSERT_EQ(Update({Obj("gone", 65536, 6)}).codes(0), 0);
  for (int i = 0; i < 40; ++i) PutSummed("fill" + std::to_string(i), 100 + i, At(1 + i));
  ASSERT_EQ(Exists1("solo"), 1);
  ASSERT_EQ(Get1("solo", At(50), true).replicas_size(), 1);
  EXPECT_EQ(Code(Update({}, {Obj("solo", 0, 5)}, "node", "dram#disk", At(50)).codes(0)),
            ErrorCode::OK);
  EXPECT_EQ(Exists1("solo"), 0);
  // A remove frees the disk replica through the disk segment's journal (its host frees the
  // range when it applies the FREE), not through a TIER_UPDATE.
  EXPECT_EQ(Remove1("gone", At(50)), ErrorCode::OK);
  rpc::Ping p;
  p.set_client_id("node");
  rpc::JournalAck* ack = p.add_journal_acks();
  ack->set_segment_name("dram#disk");
  ack->set_applied_seq(0);
  auto reply = core_.Ping(p, At(50));
  ASSERT_TRUE(reply.ok());
  bool freed = false;
  for (const auto& j : reply->journals()) {
    if (j.segment_name() != "dram#disk") continue;
    for (const auto& e : j.entries()) freed |= e.freed() && e.offset() == 65536;
  }
  EXPECT_TRUE(freed);
}

TEST(TierRestoreTest, RestartedDiskSegmentListsItsObjectsAgain) {
  MasterCore core(MasterOptions(), 7);
  rpc::MountSegment m;
  m.set_client_id("node2");
  m.set_segment_name("n#disk");
  m.set_endpoint("127.0.0.1:9100");
  m.set_size(4 << 20);
  m.set_tier(rpc::TIER_DISK);
  m.set_incarnation(1234);
  for (int i = 0; i < 3; ++i) {
    rpc::StoredObject* o = m.add_objects();
    o->set_key("k" + std::to_string(i));
    o->set_offset(static_cast<uint64_t>(i) * 65536);
    o->set_size(65536);
    o->set_checksum(10 + i);
  }
  auto r = core.MountSegment(m, kT0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->objects_restored(), 3u);
  rpc::KeysRequest k;
  k.add_keys("k1");
  k.set_no_lease(true);
  auto loc = core.GetReplicaList(k, kT0).objects(0);
  ASSERT_EQ(loc.code(), 0);
  ASSERT_EQ(loc.replicas_size(), 1);
  EXPECT_EQ(loc.replicas(0).tier(), static_cast<uint32_t>(rpc::TIER_DISK));
  EXPECT_EQ(loc.replicas(0).offset(), 65536u);
  EXPECT_EQ(loc.checksum(), 11u);
  // Still no placements there, after the restore too.
  EXPECT_EQ(core.Stat().capacity(), 0u);
}

}  // namespace
}  // namespace kvpool::master

namespace kvpool::master {
namespace {

using testing::At;
using testing::Code;
using testing::kT0;

// PROMOTE (master_promote.cc): a disk-only object gets a DRAM replica again, listed first.
class PromoteTest : public TierTest {
 protected:
  // "cold": on disk only (its DRAM copy evicted by fills older than the minimum age).
  void MakeCold() {
    PutSummed("cold", 42);
    ASSERT_EQ(Code(Update({Obj("cold", 0, 42)}).codes(0)), ErrorCode::OK);
    for (int i = 0; i < 20; ++i) PutSummed("fill" + std::to_string(i), 100 + i, At(1 + i));
    rpc::ObjectLocation loc = Get1("cold", At(30), /*no_lease=*/true);
    ASSERT_EQ(loc.replicas_size(), 1);
    ASSERT_EQ(loc.replicas(0).tier(), static_cast<uint32_t>(rpc::TIER_DISK));
  }
  rpc::PromoteReply Promote(const std::vector<rpc::StoredObject>& start,
                            const std::vector<rpc::StoredObject>& commit = {},
                            const std::vector<rpc::StoredObject>& cancel = {},
                            Clock::time_point now = At(40)) {
    rpc::Promote p;
    p.set_client_id("node");
    p.set_segment_name("dram");
    for (auto& o : start) *p.add_start() = o;
    for (auto& o : commit) *p.add_commit() = o;
    for (auto& o : cancel) *p.add_cancel() = o;
    auto r = core_.Promote(p, now);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : rpc::PromoteReply();
  }
};

TEST_F(PromoteTest, StartThenCommitListsTheDramCopyFirstAndJournalsIt) {
  MakeCold();
  const uint64_t used = Used();
  auto s = Promote({Obj("cold", 0, 42)});
  ASSERT_EQ(Code(s.start_codes(0)), ErrorCode::OK);
  const uint64_t at = s.start_offsets(0);
  EXPECT_GE(Used(), used);  // reserved (eviction of an old fill may have made the room)
  // Not listed before the commit.
  EXPECT_EQ(Get1("cold", At(41), true).replicas_size(), 1);
  auto c = Promote({}, {Obj("cold", at, 42)});
  ASSERT_EQ(Code(c.commit_codes(0)), ErrorCode::OK);
  rpc::ObjectLocation loc = Get1("cold", At(42), true);
  ASSERT_EQ(loc.replicas_size(), 2);
  EXPECT_EQ(loc.replicas(0).tier(), 0u);
  EXPECT_EQ(loc.replicas(0).segment_name(), "dram");
  EXPECT_EQ(loc.replicas(0).offset(), at);
  EXPECT_EQ(loc.replicas(1).tier(), static_cast<uint32_t>(rpc::TIER_DISK));
  EXPECT_EQ(core_.promoted_total(), 1u);
  // The host learns of it through its segment's journal (a master restart keeps it).
  rpc::Ping ping;
  ping.set_client_id("node");
  rpc::JournalAck* ack = ping.add_journal_acks();
  ack->set_segment_name("dram");
  auto pong = core_.Ping(ping, At(43));
  ASSERT_TRUE(pong.ok());
  bool journaled = false;
  for (const auto& j : pong->journals()) {
    for (const auto& e : j.entries()) journaled |= e.key() == "cold" && e.offset() == at;
  }
  EXPECT_TRUE(journaled);
  // Again: it has a DRAM copy now.
  EXPECT_EQ(Code(Promote({Obj("cold", 0, 42)}).start_codes(0)), ErrorCode::OBJECT_ALREADY_EXISTS);
}

TEST_F(PromoteTest, RefusalsAndWhatTheyFree) {
  MakeCold();
  PutSummed("warm", 7, At(35));  // has its DRAM copy
  auto s = Promote({Obj("cold", 0, 43), Obj("cold", 0, 42, kTierObj + 1), Obj("missing", 0, 1),
                    Obj("warm", 0, 7)});
  EXPECT_EQ(Code(s.start_codes(0)), ErrorCode::INVALID_PARAMS);  // another checksum
  EXPECT_EQ(Code(s.start_codes(1)), ErrorCode::INVALID_PARAMS);  // another size
  EXPECT_EQ(Code(s.start_codes(2)), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Code(s.start_codes(3)), ErrorCode::OBJECT_ALREADY_EXISTS);
  // A commit of a range never started, or of another key, lists nothing.
  EXPECT_EQ(Code(Promote({}, {Obj("cold", 12345, 42)}).commit_codes(0)),
            ErrorCode::OBJECT_NOT_FOUND);
  // Cancel frees the reservation; a commit after it finds nothing.
  const uint64_t used = Used();
  auto started = Promote({Obj("cold", 0, 42)});
  ASSERT_EQ(Code(started.start_codes(0)), ErrorCode::OK);
  const uint64_t at = started.start_offsets(0);
  Promote({}, {}, {Obj("cold", at, 42)});
  EXPECT_LE(Used(), used);
  EXPECT_EQ(Code(Promote({}, {Obj("cold", at, 42)}).commit_codes(0)), ErrorCode::OBJECT_NOT_FOUND);
  // The object changed meanwhile (upserted): the filled range is freed, never listed.
  started = Promote({Obj("cold", 0, 42)});
  ASSERT_EQ(Code(started.start_codes(0)), ErrorCode::OK);
  ASSERT_EQ(Remove1("cold", At(41)), ErrorCode::OK);
  EXPECT_EQ(
      Code(Promote({}, {Obj("cold", started.start_offsets(0), 42)}, {}, At(42)).commit_codes(0)),
      ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Exists1("cold"), 0);
  // Only the segment's own client, and only its DRAM segment.
  rpc::Promote other;
  other.set_client_id("intruder");
  other.set_segment_name("dram");
  EXPECT_EQ(core_.Promote(other, At(43)).code(), ErrorCode::ILLEGAL_CLIENT);
  other.set_client_id("node");
  other.set_segment_name("dram#disk");
  EXPECT_EQ(core_.Promote(other, At(43)).code(), ErrorCode::ILLEGAL_CLIENT);
}

TEST_F(PromoteTest, AnUncommittedReservationLapsesAndALeasedObjectWaits) {
  MakeCold();
  auto keep_alive = [&](int from, int to) {
    for (int t = from; t <= to; t += 5) Ping("node", At(t));
  };
  // Never committed: freed 30 s after it was made.
  auto started = Promote({Obj("cold", 0, 42)});
  ASSERT_EQ(Code(started.start_codes(0)), ErrorCode::OK);
  keep_alive(45, 71);
  core_.Housekeeping(At(40 + 31));
  EXPECT_EQ(
      Code(Promote({}, {Obj("cold", started.start_offsets(0), 42)}, {}, At(72)).commit_codes(0)),
      ErrorCode::OBJECT_NOT_FOUND);
  // A reader holds it: the commit waits (the reservation kept) and succeeds once the lease ends.
  started = Promote({Obj("cold", 0, 42)}, {}, {}, At(72));
  ASSERT_EQ(Code(started.start_codes(0)), ErrorCode::OK);
  const uint64_t at = started.start_offsets(0);
  ASSERT_EQ(Get1("cold", At(72)).code(), 0);
  EXPECT_EQ(Code(Promote({}, {Obj("cold", at, 42)}, {}, At(73)).commit_codes(0)),
            ErrorCode::OBJECT_HAS_LEASE);
  keep_alive(75, 85);
  core_.Housekeeping(At(85));  // past the lease's 10 s
  EXPECT_EQ(Code(Promote({}, {Obj("cold", at, 42)}, {}, At(86)).commit_codes(0)), ErrorCode::OK);
  EXPECT_EQ(Get1("cold", At(87), true).replicas(0).offset(), at);
}

}  // namespace
}  // namespace kvpool::master
