// Read leases scoped to the transfer: released by their reader, ended by the TTL or by the
// reader's death, and what a full pool does with them (time is injected).
#include <gtest/gtest.h>

#include "master/master_core.h"
#include "master/master_test_util.h"

namespace kvpool::master {
namespace {

using testing::At;
using testing::Code;
using testing::CoreTest;
using testing::kT0;

class LeaseTest : public CoreTest {
 protected:
  // A leased get of `keys` by `reader`; returns the lease id.
  uint64_t Lease(const std::string& reader, const std::vector<std::string>& keys,
                 Clock::time_point now = kT0) {
    rpc::KeysRequest req = Keys(keys);
    req.set_client_id(reader);
    rpc::GetReplicaListReply r = core_.GetReplicaList(req, now);
    for (const auto& o : r.objects()) EXPECT_EQ(o.code(), 0) << o.message();
    return r.lease_id();
  }
  size_t Release(const std::string& reader, uint64_t id, Clock::time_point now = kT0) {
    return core_.ReleaseLeases(reader, std::span<const uint64_t>(&id, 1), now);
  }
};

TEST_F(LeaseTest, ReleaseEndsTheLeaseAtOnce) {
  Mount("node1", "n1");
  PutComplete("w", "k", 100);
  uint64_t id = Lease("r", {"k"});
  ASSERT_NE(id, 0u);
  EXPECT_EQ(core_.leases_held(), 1u);
  EXPECT_EQ(core_.bytes_leased(), 100u);
  EXPECT_EQ(Remove1("k", At(0.001)), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(Release("r", id), 1u);
  EXPECT_EQ(core_.leases_held(), 0u);
  EXPECT_EQ(core_.bytes_leased(), 0u);
  EXPECT_EQ(Release("r", id), 0u);  // once only
  EXPECT_EQ(Remove1("k", At(0.002)), ErrorCode::OK);
}

TEST_F(LeaseTest, AReleaseFreesOnlyThatReadersHold) {
  Mount("node1", "n1");
  PutComplete("w", "k", 100);
  uint64_t a = Lease("r1", {"k"});
  uint64_t b = Lease("r2", {"k"});
  ASSERT_NE(a, b);
  EXPECT_EQ(Release("r2", a), 0u);  // not r2's lease
  EXPECT_EQ(Release("r1", a), 1u);
  EXPECT_EQ(Remove1("k"), ErrorCode::OBJECT_HAS_LEASE);  // r2 still reads
  EXPECT_EQ(Release("r2", b), 1u);
  EXPECT_EQ(Remove1("k"), ErrorCode::OK);
}

// A release of a lease on an object since removed and put again must not end the new
// object's leases (the new object may even sit at the old one's address).
TEST_F(LeaseTest, AStaleReleaseLeavesANewObjectsLeasesAlone) {
  Mount("node1", "n1");
  PutComplete("w", "k", 100);
  uint64_t old_lease = Lease("r1", {"k"});
  EXPECT_EQ(Remove1("k", kT0, /*force=*/true), ErrorCode::OK);
  PutComplete("w", "k", 100);
  uint64_t lease = Lease("r2", {"k"});
  EXPECT_EQ(Release("r1", old_lease), 1u);  // the lease ends; its hold is on nothing alive
  EXPECT_EQ(Remove1("k"), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(Release("r2", lease), 1u);
  EXPECT_EQ(Remove1("k"), ErrorCode::OK);
}

TEST_F(LeaseTest, TheTtlBoundsAnUnreleasedLease) {
  Mount("node1", "n1");
  PutComplete("w", "k", 100);
  Lease("r", {"k"}, At(1));
  EXPECT_EQ(Remove1("k", At(10.9)), ErrorCode::OBJECT_HAS_LEASE);
  Ping("node1", At(11));
  Ping("r", At(11));
  Ping("w", At(11));
  EXPECT_EQ(core_.Housekeeping(At(11)).leases_expired, 1u);
  EXPECT_EQ(core_.leases_held(), 0u);
  EXPECT_EQ(Remove1("k", At(11)), ErrorCode::OK);
}

// A reader killed -9 stops pinging: once the master declares it dead its leases end, not at
// their TTL. The lease bound it was given never outlasts that (min(lease TTL, client TTL)).
TEST_F(LeaseTest, ADeadReadersLeasesEndWithItsLiveness) {
  Mount("node1", "n1");
  PutComplete("w", "k", 100);
  Ping("r", kT0);
  rpc::KeysRequest req = Keys({"k"});
  req.set_client_id("r");
  rpc::GetReplicaListReply got = core_.GetReplicaList(req, kT0);
  EXPECT_EQ(got.lease_ttl_ms(), 10000u);   // --default_kv_lease_ttl
  EXPECT_EQ(got.client_ttl_ms(), 10000u);  // --client_ttl
  rpc::Ping ping;
  ping.set_client_id("r");
  EXPECT_EQ(core_.Ping(ping, kT0)->client_handle(), got.client_handle());
  Ping("node1", At(10.5));
  Ping("w", At(10.5));
  HousekeepingReport r = core_.Housekeeping(At(10.5));
  EXPECT_EQ(r.dead_clients, 1u);
  EXPECT_EQ(r.leases_of_dead_clients, 1u);
  EXPECT_EQ(core_.leases_held(), 0u);
  EXPECT_EQ(Remove1("k", At(10.5)), ErrorCode::OK);
  // Back from the dead, it is a new registration: a transfer that spanned its death can tell.
  EXPECT_NE(core_.Ping(ping, At(10.6))->client_handle(), got.client_handle());
}

// Full pool: a put evicts what no transfer holds; it is refused only when every complete
// object is leased, with the reason in the message and counted by reason.
TEST_F(LeaseTest, AFullPoolRefusesOnlyWhenEverythingIsLeased) {
  Mount("node1", "n1", 4096);
  for (int i = 0; i < 4; ++i) PutComplete("w", "k" + std::to_string(i), 1024);
  std::vector<uint64_t> ids;
  ids.reserve(4);
  for (int i = 0; i < 4; ++i) ids.push_back(Lease("r", {"k" + std::to_string(i)}));
  auto refused = Put1("w", "new", 1024, At(0.1));
  EXPECT_EQ(Code(refused.code()), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_NE(refused.message().find("leased by a transfer in flight"), std::string::npos)
      << refused.message();
  EXPECT_EQ(core_.refused(RefusalReason::kLeasedOrPinned), 1u);
  EXPECT_EQ(core_.Stat().refused_leased_or_pinned(), 1u);
  EXPECT_EQ(core_.Stat().leases_held(), 4u);
  EXPECT_EQ(core_.Stat().bytes_leased(), 4096u);
  // One reader finishes: its object is evicted synchronously and the put succeeds.
  EXPECT_EQ(Release("r", ids[2]), 1u);
  auto placed = Put1("w", "new", 1024, At(0.2));
  EXPECT_EQ(placed.code(), 0) << placed.message();
  EXPECT_EQ(Exists1("k2"), 0);
  for (int i : {0, 1, 3}) EXPECT_EQ(Exists1("k" + std::to_string(i)), 1);
  EXPECT_EQ(core_.refused(RefusalReason::kLeasedOrPinned), 1u);
}

TEST_F(LeaseTest, RefusalsWithoutASegmentAreCountedAsSuch) {
  auto r = Put1("w", "k", 100);
  EXPECT_EQ(Code(r.code()), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_NE(r.message().find("no segment is mounted"), std::string::npos) << r.message();
  EXPECT_EQ(core_.refused(RefusalReason::kNoSegment), 1u);
  EXPECT_EQ(core_.Stat().refused_no_segment(), 1u);
}

// A put that needs room takes objects nobody asked for before those exists just found, and
// idle ones before young ones.
TEST_F(LeaseTest, SynchronousEvictionPrefersUnaskedThenIdleObjects) {
  options_.eviction_ratio = 0;  // evict exactly what the put needs
  MasterCore core(options_, 7);
  auto put = [&](const std::string& key, Clock::time_point now) {
    rpc::PutStart p;
    p.set_client_id("w");
    auto* item = p.add_items();
    item->set_key(key);
    item->set_size(1024);
    auto r = core.PutStart(p, now);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->results(0).code(), 0) << r->results(0).message();
    rpc::PutEnd e;
    e.set_client_id("w");
    e.add_commit_keys(key);
    ASSERT_EQ(core.PutEnd(e, now)->codes(0), 0);
  };
  rpc::MountSegment m = testing::TestSegmentMount();
  m.set_size(4096);
  ASSERT_TRUE(core.MountSegment(m, kT0).ok());
  put("asked-old", At(0));
  put("unasked-newer", At(1));
  put("asked-newer", At(2));
  put("young", At(9.5));
  core.Exists(Keys({"asked-old"}), At(3));    // found by exists: asked, idle since At(3)
  core.Exists(Keys({"asked-newer"}), At(4));  // asked, idle since At(4)
  auto exists = [&](const std::string& k) { return core.Exists(Keys({k}), At(20)).codes(0); };
  put("n1", At(10));  // the unasked idle object goes first, though newer than asked-old
  EXPECT_EQ(core.Exists(Keys({"unasked-newer"}), At(10)).codes(0), 0);
  put("n2", At(10));  // then the least recently asked
  EXPECT_EQ(core.Exists(Keys({"asked-old"}), At(10)).codes(0), 0);
  put("n3", At(10));
  EXPECT_EQ(core.Exists(Keys({"asked-newer"}), At(10)).codes(0), 0);
  put("n4", At(10));  // only young ones are left: the oldest of them
  EXPECT_EQ(exists("young"), 0);
  EXPECT_EQ(exists("n4"), 1);
}

// A lease taken out of the table still counts until its holds are undone and it is reported
// Ended: a client that waits for the stat to read 0 leases and then removes is never refused
// (the count fell before the holds were undone once, and a remove in between was refused).
TEST(LeaseTableTest, ALeaseCountsUntilItsHoldsAreUndone) {
  LeaseTable table(7);
  master::Lease lease;
  lease.client = 1;
  lease.bytes = 100;
  lease.holds.push_back(ShardHold{});
  const uint64_t id = table.Add(std::move(lease));
  EXPECT_EQ(table.held(), 1u);
  std::optional<master::Lease> ended = table.Release(id, 1);
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(table.held(), 1u);
  EXPECT_EQ(table.bytes(), 100u);
  table.Ended(*ended);
  EXPECT_EQ(table.held(), 0u);
  EXPECT_EQ(table.bytes(), 0u);
  EXPECT_FALSE(table.Release(id, 1).has_value());
}

}  // namespace
}  // namespace kvpool::master
