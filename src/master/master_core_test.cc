// MasterCore's operations and every error they document (time is injected).
#include "master/master_core.h"

#include <gtest/gtest.h>

#include <set>

#include "master/master_test_util.h"

namespace kvpool::master {
namespace {

using testing::At;
using testing::Code;
using testing::CoreTest;
using testing::kT0;

TEST_F(CoreTest, PingRegistersAndReportsKnown) {
  rpc::Ping p;
  EXPECT_EQ(core_.Ping(p, kT0).code(), ErrorCode::INVALID_PARAMS);
  p.set_client_id("c1");
  auto first = core_.Ping(p, kT0);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->client_known());
  EXPECT_EQ(first->master_epoch(), 42u);
  EXPECT_TRUE(core_.Ping(p, kT0)->client_known());
  EXPECT_NE(MasterCore(options_).epoch(), 0u);  // random per process otherwise
}

TEST_F(CoreTest, MountErrors) {
  uint64_t id = Mount("node1", "n1");
  EXPECT_EQ(Mount("node1", "n1"), id);  // idempotent
  rpc::MountSegment m;
  m.set_client_id("node2");
  m.set_segment_name("n1");
  m.set_endpoint("127.0.0.1:9002");
  m.set_size(kSeg);
  EXPECT_EQ(core_.MountSegment(m, kT0).code(), ErrorCode::SEGMENT_ALREADY_EXISTS);
  m.set_segment_name("n2");
  m.set_endpoint("no-port");
  EXPECT_EQ(core_.MountSegment(m, kT0).code(), ErrorCode::INVALID_PARAMS);
  m.set_endpoint("127.0.0.1:1");
  m.set_size(1);
  EXPECT_EQ(core_.MountSegment(m, kT0).code(), ErrorCode::INVALID_PARAMS);
  m.set_size(kSeg);
  m.clear_client_id();
  EXPECT_EQ(core_.MountSegment(m, kT0).code(), ErrorCode::INVALID_PARAMS);
  m.set_client_id("node2");
  m.clear_segment_name();
  EXPECT_EQ(core_.MountSegment(m, kT0).code(), ErrorCode::INVALID_PARAMS);
}

TEST_F(CoreTest, UnmountErrorsAndDropsReplicas) {
  Mount("node1", "n1");
  PutComplete("w", "k", 100);
  rpc::UnmountSegment u;
  u.set_segment_name("n1");
  EXPECT_EQ(core_.UnmountSegment(u, kT0).code(), ErrorCode::INVALID_PARAMS);
  u.set_client_id("node2");
  EXPECT_EQ(core_.UnmountSegment(u, kT0).code(), ErrorCode::ILLEGAL_CLIENT);
  u.set_client_id("node1");
  u.set_segment_name("nope");
  EXPECT_EQ(core_.UnmountSegment(u, kT0).code(), ErrorCode::SEGMENT_NOT_FOUND);
  u.set_segment_name("n1");
  EXPECT_TRUE(core_.UnmountSegment(u, kT0).ok());
  EXPECT_EQ(Code(Get1("k").code()), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(core_.Stat().object_count(), 0u);
}

TEST_F(CoreTest, PutGetLifecycle) {
  Mount("node1", "n1");
  auto r = Put1("w", "k", 1000);
  ASSERT_EQ(r.code(), 0);
  EXPECT_FALSE(r.already_exists());
  ASSERT_EQ(r.replicas_size(), 1);
  EXPECT_EQ(r.replicas(0).segment_name(), "n1");
  EXPECT_EQ(r.replicas(0).endpoint(), "127.0.0.1:9002");
  EXPECT_EQ(r.replicas(0).length(), 1000u);
  EXPECT_EQ(Code(Get1("k").code()), ErrorCode::REPLICA_IS_NOT_READY);
  EXPECT_EQ(Exists1("k"), 0);
  EXPECT_EQ(PutEnd("w", {"k"}).codes(0), 0);
  auto g = core_.GetReplicaList(CoreTest::Keys({"k", "missing"}), At(1));
  EXPECT_EQ(g.lease_ttl_ms(), 10000u);
  ASSERT_EQ(g.objects_size(), 2);
  EXPECT_EQ(g.objects(0).code(), 0);
  EXPECT_EQ(g.objects(0).size(), 1000u);
  ASSERT_EQ(g.objects(0).replicas_size(), 1);
  EXPECT_EQ(g.objects(0).replicas(0).offset(), r.replicas(0).offset());
  EXPECT_EQ(g.objects(0).replicas(0).segment_name(), "n1");
  EXPECT_EQ(Code(g.objects(1).code()), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Exists1("k"), 1);
  EXPECT_EQ(Used(), 1024u);  // rounded to the 64-byte alignment
}

TEST_F(CoreTest, PutStartItemErrors) {
  auto none = Put1("w", "k", 100);
  EXPECT_EQ(Code(none.code()), ErrorCode::NO_AVAILABLE_HANDLE);  // nothing mounted
  Mount("node1", "n1");
  auto r = PutStart("w", {"", std::string(5000, 'k'), "ok"}, 100);
  EXPECT_EQ(Code(r.results(0).code()), ErrorCode::INVALID_KEY);
  EXPECT_EQ(Code(r.results(1).code()), ErrorCode::INVALID_KEY);
  EXPECT_EQ(r.results(2).code(), 0);
  EXPECT_EQ(Code(Put1("w", "zero", 0).code()), ErrorCode::INVALID_PARAMS);
  PutComplete("w", "victim", 100);
  auto big = Put1("w", "big", 2 * kSeg);  // larger than every segment: no eviction either
  EXPECT_EQ(Code(big.code()), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_NE(big.message().find("largest"), std::string::npos);
  EXPECT_EQ(Code(Put1("w", "huge", UINT64_MAX).code()), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(Exists1("victim"), 1);
  EXPECT_EQ(core_.Stat().evicted_total(), 0u);
  rpc::PutStart p;
  p.add_items()->set_key("x");
  EXPECT_EQ(core_.PutStart(p, kT0).code(), ErrorCode::INVALID_PARAMS);  // no client id
  p.set_client_id("w");
  p.mutable_config()->set_replica_num(kMaxReplicas + 1);
  EXPECT_EQ(core_.PutStart(p, kT0).code(), ErrorCode::INVALID_PARAMS);
}

TEST_F(CoreTest, ExistingKeysAreImmutable) {
  Mount("node1", "n1");
  PutComplete("w1", "done", 100);
  auto again = Put1("w2", "done", 100);
  EXPECT_EQ(again.code(), 0);
  EXPECT_TRUE(again.already_exists());
  EXPECT_EQ(again.replicas_size(), 0);
  ASSERT_EQ(Put1("w1", "busy", 100).code(), 0);
  auto busy = Put1("w2", "busy", 100, At(29));  // being written, within the discard timeout
  EXPECT_EQ(busy.code(), 0);
  EXPECT_TRUE(busy.already_exists());
  EXPECT_EQ(core_.Stat().object_count(), 2u);
}

TEST_F(CoreTest, Upsert) {
  Mount("node1", "n1");
  PutComplete("w", "k", 100);
  uint64_t used = Used();
  auto up = Put1("w", "k", 200, kT0, /*upsert=*/true);
  ASSERT_EQ(up.code(), 0);
  EXPECT_FALSE(up.already_exists());
  EXPECT_EQ(up.replicas(0).length(), 200u);
  EXPECT_EQ(Code(Get1("k").code()), ErrorCode::REPLICA_IS_NOT_READY);
  EXPECT_EQ(Code(Put1("w2", "k", 200, kT0, true).code()), ErrorCode::REPLICA_IS_NOT_READY);
  EXPECT_EQ(PutEnd("w", {"k"}).codes(0), 0);
  EXPECT_GT(Used(), used);                   // old replica freed, bigger one reserved
  EXPECT_EQ(Get1("k", At(1)).size(), 200u);  // now leased until At(11)
  // Mooncake's number for an upsert under a reader: -714 OBJECT_REPLICA_BUSY.
  EXPECT_EQ(Put1("w", "k", 300, At(5), true).code(), -714);
  EXPECT_EQ(Code(Put1("w", "k", 300, At(5), true).code()), ErrorCode::OBJECT_REPLICA_BUSY);
  EXPECT_EQ(Put1("w", "k", 300, At(12), true).code(), 0);
}

TEST_F(CoreTest, ReplicasOnDistinctPreferredSegments) {
  Mount("a", "na");
  Mount("b", "nb");
  Mount("c", "nc");
  rpc::ReplicateConfig cfg;
  cfg.set_replica_num(2);
  cfg.add_preferred_segments("nc");
  for (int i = 0; i < 10; ++i) {
    auto r = Put1("w", "k" + std::to_string(i), 100, kT0, false, cfg);
    ASSERT_EQ(r.replicas_size(), 2);
    EXPECT_EQ(r.replicas(0).segment_name(), "nc");
    EXPECT_NE(r.replicas(1).segment_name(), "nc");
  }
  cfg.set_replica_num(5);  // best effort: three segments, three replicas
  EXPECT_EQ(Put1("w", "five", 100, kT0, false, cfg).replicas_size(), 3);
}

TEST_F(CoreTest, PutEndErrors) {
  Mount("node1", "n1");
  ASSERT_EQ(Put1("w1", "a", 100).code(), 0);
  ASSERT_EQ(Put1("w1", "b", 100).code(), 0);
  auto r = PutEnd("w2", {"a", "missing", ""}, {"b"});
  ASSERT_EQ(r.codes_size(), 4);
  ASSERT_EQ(r.messages_size(), 4);
  EXPECT_EQ(Code(r.codes(0)), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(Code(r.codes(1)), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Code(r.codes(2)), ErrorCode::INVALID_KEY);
  EXPECT_EQ(Code(r.codes(3)), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_NE(r.messages(0).find("key=a"), std::string::npos);
  r = PutEnd("w1", {"a", "a"}, {"b", "b", "a"});
  EXPECT_EQ(r.codes(0), 0);
  EXPECT_EQ(r.codes(1), 0);  // committing twice is harmless
  EXPECT_EQ(r.codes(2), 0);  // revoked
  EXPECT_EQ(Code(r.codes(3)), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Code(r.codes(4)), ErrorCode::INVALID_WRITE);  // complete: use remove
  // b's space is not handed out at once: bytes its writer sent may still arrive (a partition
  // healing); it comes back at put start + put_start_release_timeout (600 s by default).
  // (SegmentRegistry's FreeLater tests cover the release itself.)
  EXPECT_EQ(Used(), 256u);
  core_.Housekeeping(kT0 + std::chrono::seconds(1));
  EXPECT_EQ(Used(), 256u);
  rpc::PutEnd empty;
  EXPECT_EQ(core_.PutEnd(empty, kT0).code(), ErrorCode::INVALID_PARAMS);
}

TEST_F(CoreTest, LeasesBlockRemovalUntilTheyEnd) {
  Mount("node1", "n1");
  PutComplete("w", "k", 100);
  EXPECT_EQ(Get1("k", At(0), /*no_lease=*/true).code(), 0);
  EXPECT_EQ(Remove1("k", At(0)), ErrorCode::OK);  // a metadata-only get took no lease
  PutComplete("w", "k", 100);
  EXPECT_EQ(Get1("k", At(1)).code(), 0);  // leased until At(11)
  EXPECT_EQ(Get1("k", At(2)).code(), 0);  // extended to At(12)
  EXPECT_EQ(Remove1("k", At(11.5)), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(core_.RemoveAll(rpc::RemoveAll(), At(11.5)).removed(), 0u);
  EXPECT_EQ(Remove1("k", At(12)), ErrorCode::OK);
  PutComplete("w", "k", 100);
  EXPECT_EQ(Get1("k", At(1)).code(), 0);
  EXPECT_EQ(Remove1("k", At(2), /*force=*/true), ErrorCode::OK);
  EXPECT_EQ(Code(Get1("k", At(2)).code()), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Used(), 128u);  // the reader may still be copying: freed when its lease ends
  Ping("node1", At(10.5));
  core_.Housekeeping(At(11));
  EXPECT_EQ(Used(), 0u);
}

// Issue 30: a forced remove under a reader's lease must not hand the object's space to the next
// put while the reader may still copy from it (it would read the new object's bytes and report
// the old object's size).
TEST_F(CoreTest, ForcedRemoveKeepsALeasedObjectsSpaceUntilTheLeaseEnds) {
  Mount("node1", "n1", /*size=*/128);  // room for exactly one object
  PutComplete("w", "old", 100);
  rpc::ObjectLocation read = Get1("old", At(1));  // leased until At(11)
  ASSERT_EQ(read.code(), 0);
  EXPECT_EQ(Remove1("old", At(2), /*force=*/true), ErrorCode::OK);
  EXPECT_EQ(Code(Put1("w", "new", 100, At(3)).code()), ErrorCode::NO_AVAILABLE_HANDLE);
  Ping("node1", At(10.5));
  core_.Housekeeping(At(11));
  auto placed = Put1("w", "new", 100, At(11));
  ASSERT_EQ(placed.code(), 0);
  EXPECT_EQ(placed.replicas(0).offset(), read.replicas(0).offset());
}

// Issue 30: a writer that could not reach a segment's host reports it in PUT_END; the master
// places nothing there until the segment's owner pings again. A put may exclude segments.
TEST_F(CoreTest, UnreachableSegmentTakesNoReplicasUntilItsOwnerPings) {
  Mount("node1", "n1");
  Mount("node2", "n2");
  rpc::PutEnd report;
  report.set_client_id("w");
  report.add_unreachable_segments("n1");
  report.add_unreachable_segments("not-mounted");
  ASSERT_TRUE(core_.PutEnd(report, kT0).ok());
  // Operators see which host is unreachable from whom (/segments, kvpool_master_segment_*).
  auto seg = [&](const std::string& name) {
    const rpc::StatReply stat = core_.Stat();
    for (const rpc::SegmentInfo& s : stat.segments()) {
      if (s.segment_name() == name) return s;
    }
    return rpc::SegmentInfo();
  };
  EXPECT_TRUE(seg("n1").suspect());
  EXPECT_EQ(seg("n1").unreachable_reports(), 1u);
  EXPECT_EQ(seg("n1").last_unreachable_by(), "w");
  EXPECT_GT(seg("n1").last_unreachable_unix_ms(), 0);
  EXPECT_FALSE(seg("n2").suspect());
  EXPECT_EQ(seg("n2").unreachable_reports(), 0u);
  rpc::ReplicateConfig prefer_n1;
  prefer_n1.add_preferred_segments("n1");
  for (int i = 0; i < 8; ++i) {
    auto r = Put1("w", "k" + std::to_string(i), 100, kT0, false, prefer_n1);
    ASSERT_EQ(r.code(), 0) << r.message();
    EXPECT_EQ(r.replicas(0).segment_name(), "n2");
  }
  Ping("node2", At(1));  // another host's ping changes nothing
  EXPECT_EQ(Put1("w", "after-n2-ping", 100, At(1), false, prefer_n1).replicas(0).segment_name(),
            "n2");
  Ping("node1", At(1));
  EXPECT_FALSE(seg("n1").suspect());
  EXPECT_EQ(seg("n1").unreachable_reports(), 1u);  // the history stays
  EXPECT_EQ(Put1("w", "after-ping", 100, At(1), false, prefer_n1).replicas(0).segment_name(), "n1");
  rpc::ReplicateConfig exclude_n1 = prefer_n1;
  exclude_n1.add_excluded_segments("n1");
  EXPECT_EQ(Put1("w", "excluded", 100, At(1), false, exclude_n1).replicas(0).segment_name(), "n2");
  exclude_n1.add_excluded_segments("n2");
  EXPECT_EQ(Code(Put1("w", "nowhere", 100, At(1), false, exclude_n1).code()),
            ErrorCode::NO_AVAILABLE_HANDLE);
}

// Issue 28: two live hosts announcing the same address (both started with the same --host)
// would replace each other's segment at every heartbeat, each time dropping its objects. A
// mount from another host is refused while the owner's segment is mounted (until --client_ttl
// expires it); a restart (a mount from the same host) replaces the segment at once, as before.
TEST_F(CoreTest, TwoLiveHostsAtOneAddressAreRefusedARestartIsNot) {
  auto mount = [&](const std::string& client, uint64_t incarnation, Clock::time_point now,
                   const std::string& from) {
    rpc::MountSegment m;
    m.set_client_id(client);
    m.set_segment_name("10.0.0.5:50052");
    m.set_endpoint("10.0.0.5:50052");
    m.set_size(kSeg);
    m.set_incarnation(incarnation);
    return core_.MountSegment(m, now, from);
  };
  ASSERT_TRUE(mount("node-a", 0xa, kT0, "10.0.0.5").ok());
  PutComplete("node-a", "kept", 100);
  auto clash = mount("node-b", 0xb, At(0.5), "10.0.0.6");
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.code(), ErrorCode::SEGMENT_ALREADY_EXISTS);
  EXPECT_NE(clash.status().message().find("client=node-a"), std::string::npos)
      << clash.status().ToString();
  EXPECT_NE(clash.status().message().find("--host"), std::string::npos);
  EXPECT_EQ(Get1("kept", At(0.6)).code(), 0);  // the first host's objects stay
  // Silent for a while (cut off, say) but not expired: still refused.
  EXPECT_FALSE(mount("node-b", 0xb, At(8.0), "10.0.0.6").ok());
  Ping("node-a", At(8.5));
  // A restart comes from the host itself: it replaces the segment at once.
  auto restarted = mount("node-a2", 0xa2, At(9.0), "10.0.0.5");
  ASSERT_TRUE(restarted.ok()) << restarted.status().ToString();
  EXPECT_EQ(Code(Get1("kept", At(9.1)).code()), ErrorCode::OBJECT_NOT_FOUND);
  // Another host, once the owner has expired (--client_ttl, 10 s): a fresh mount.
  core_.Housekeeping(At(20.0));
  EXPECT_TRUE(mount("node-b", 0xb, At(20.1), "10.0.0.6").ok());
}

TEST_F(CoreTest, RemoveErrors) {
  Mount("node1", "n1");
  ASSERT_EQ(Put1("w", "pending", 100).code(), 0);
  auto r = core_.Remove(CoreTest::Keys({"missing", "pending", ""}, /*force=*/true), kT0);
  EXPECT_EQ(Code(r.codes(0)), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Code(r.codes(1)), ErrorCode::REPLICA_IS_NOT_READY);
  EXPECT_EQ(Code(r.codes(2)), ErrorCode::INVALID_KEY);
}

TEST_F(CoreTest, RemoveAllSkipsLeasedUnlessForcedAndNeverPending) {
  Mount("node1", "n1");
  PutComplete("w", "a", 100);
  PutComplete("w", "b", 100);
  PutComplete("w", "leased", 100);
  ASSERT_EQ(Put1("w", "pending", 100).code(), 0);
  Get1("leased", At(1));
  EXPECT_EQ(core_.RemoveAll(rpc::RemoveAll(), At(2)).removed(), 2u);
  rpc::RemoveAll force;
  force.set_force(true);
  EXPECT_EQ(core_.RemoveAll(force, At(2)).removed(), 1u);
  EXPECT_EQ(core_.Stat().object_count(), 1u);
  EXPECT_EQ(Used(), 256u);  // the leased one's space waits for its reader (until At(11))
  Ping("node1", At(10.5));
  core_.Housekeeping(At(11));  // frees the leased one's space (and reclaims the stale pending)
  EXPECT_LE(Used(), 128u);
}

TEST_F(CoreTest, ExistsAndPrefix) {
  Mount("node1", "n1");
  PutComplete("w", "p0", 10);
  PutComplete("w", "p1", 10);
  ASSERT_EQ(Put1("w", "p2", 10).code(), 0);  // pending counts as a miss
  PutComplete("w", "p3", 10);
  auto e = core_.Exists(CoreTest::Keys({"p0", "p2", "p3", "zz", ""}), kT0);
  EXPECT_EQ(e.codes(0), 1);
  EXPECT_EQ(e.codes(1), 0);
  EXPECT_EQ(e.codes(2), 1);
  EXPECT_EQ(e.codes(3), 0);
  EXPECT_EQ(Code(e.codes(4)), ErrorCode::INVALID_KEY);
  ASSERT_EQ(e.messages_size(), 5);  // one per key once any key has an error
  EXPECT_TRUE(e.messages(0).empty());
  EXPECT_FALSE(e.messages(4).empty());
  EXPECT_EQ(core_.Exists(CoreTest::Keys({"p0", "zz"}), kT0).messages_size(), 0);
  EXPECT_EQ(core_.ExistsPrefix(CoreTest::Keys({"p0", "p1", "p2", "p3"}), kT0).count(), 2u);
  EXPECT_EQ(core_.ExistsPrefix(CoreTest::Keys({"p3", "p0"}), kT0).count(), 2u);
  EXPECT_EQ(core_.ExistsPrefix(CoreTest::Keys({"zz", "p0"}), kT0).count(), 0u);
  EXPECT_EQ(core_.ExistsPrefix(CoreTest::Keys({}), kT0).count(), 0u);
}

TEST_F(CoreTest, AllocationFailureEvictsThenRetries) {
  Mount("node1", "n1", 64 * 1024);
  for (int i = 0; i < 64; ++i) PutComplete("w", "k" + std::to_string(i), 1024, At(i * 0.01));
  auto r = Put1("w", "new", 1024, At(1));
  ASSERT_EQ(r.code(), 0) << r.message();
  EXPECT_GE(core_.Stat().evicted_total(), 1u);
  EXPECT_EQ(Exists1("k0"), 0);   // the least recently used went first
  EXPECT_EQ(Exists1("k63"), 1);  // the newest stayed
}

// The least recently used objects are scattered between newer ones: evicting just the bytes
// the put needs leaves holes too small for it. The put still succeeds while anything is
// evictable (each retry evicts more), and the refusal's message is kept for a pool that has
// nothing left to evict.
TEST_F(CoreTest, EvictionIntoScatteredHolesStillMakesRoom) {
  Mount("node1", "n1", 64 * 1024);
  for (int i = 0; i < 16; ++i) PutComplete("w", "k" + std::to_string(i), 4096, At(i * 0.01));
  for (int i = 0; i < 16; i += 2) Get1("k" + std::to_string(i), At(1));  // the even ones: newer
  auto r = Put1("w", "big", 8 * 1024, At(100));                          // past the leases' TTL
  ASSERT_EQ(r.code(), 0) << r.message();
  EXPECT_EQ(Exists1("k15"), 0);  // an odd one (least recently used) went first
}

TEST_F(CoreTest, NoSpaceAndNothingEvictableIsPrompt) {
  Mount("node1", "n1", 8 * 1024);
  for (int i = 0; i < 8; ++i) {
    PutComplete("w", "k" + std::to_string(i), 1024);
    Get1("k" + std::to_string(i), At(1));  // leased
  }
  auto r = PutStart("w", {"x", "y"}, 1024, At(2));
  EXPECT_EQ(Code(r.results(0).code()), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(Code(r.results(1).code()), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(core_.Stat().evicted_total(), 0u);
  EXPECT_EQ(core_.Stat().object_count(), 8u);
}

TEST_F(CoreTest, StatReportsPool) {
  Mount("node1", "n1");
  Mount("node2", "n2", 2 * kSeg);
  PutComplete("w", "a", 100);
  rpc::StatReply s = core_.Stat();
  EXPECT_EQ(s.segments_size(), 2);
  EXPECT_EQ(s.capacity(), 3 * kSeg);
  EXPECT_EQ(s.used(), 128u);
  EXPECT_EQ(s.object_count(), 1u);
  EXPECT_EQ(s.client_count(), 3u);  // two nodes and a writer
  EXPECT_EQ(s.master_epoch(), 42u);
  uint64_t replicas = 0;
  for (const auto& seg : s.segments()) {
    replicas += seg.object_count();
    EXPECT_EQ(seg.client_id(), seg.segment_name() == "n1" ? "node1" : "node2");
  }
  EXPECT_EQ(replicas, 1u);
}

}  // namespace
}  // namespace kvpool::master
