// Object groups (ReplicateConfig.group_ids) and soft pins that lapse (soft_pin_ttl_ms).
#include <gtest/gtest.h>

#include "master/master_core.h"
#include "master/master_test_util.h"

namespace kvpool::master {
namespace {

using testing::At;
using testing::CoreTest;
using testing::kT0;

class GroupTest : public CoreTest {
 protected:
  static rpc::ReplicateConfig Groups(const std::vector<std::string>& ids) {
    rpc::ReplicateConfig c;
    for (auto& g : ids) c.add_group_ids(g);
    return c;
  }
  // Whether `key` is complete, without touching it (Exists marks it asked for eviction).
  int Present(const std::string& key) { return core_.InspectObject(key, kT0).ok() ? 1 : 0; }
  // Puts and commits `keys` in one batch with `cfg`.
  void PutGroup(const std::vector<std::string>& keys, rpc::ReplicateConfig cfg,
                uint64_t size = 1024, Clock::time_point now = kT0) {
    auto r = PutStart("w", keys, size, now, false, std::move(cfg));
    ASSERT_EQ(r.results_size(), static_cast<int>(keys.size()));
    for (const auto& res : r.results()) ASSERT_EQ(res.code(), 0) << res.message();
    PutEnd("w", keys, {}, now);
  }
};

TEST_F(GroupTest, GroupIdsOfTheWrongLengthOrEmptyAreInvalidParams) {
  Mount("node1", "n1");
  for (const auto& ids : std::vector<std::vector<std::string>>{{"g"}, {"g", "g", "g"}, {"g", ""}}) {
    rpc::PutStart p;
    p.set_client_id("w");
    for (const char* k : {"a", "b"}) {
      auto* item = p.add_items();
      item->set_key(k);
      item->set_size(100);
    }
    *p.mutable_config() = Groups(ids);
    auto r = core_.PutStart(p, kT0);
    EXPECT_EQ(r.code(), ErrorCode::INVALID_PARAMS) << ids.size();
    EXPECT_NE(r.status().message().find("group_ids"), std::string::npos) << r.status().ToString();
  }
  EXPECT_EQ(core_.Stat().object_count(), 0u);  // nothing reserved
  EXPECT_EQ(Used(), 0u);
}

// A group holds at most ObjectGroups::kMaxMembers objects: the put of one more is refused
// before anything is reserved, while its members' own puts (re-put, upsert) and other groups
// still work.
TEST_F(GroupTest, AFullGroupRefusesNewMembersOnly) {
  Mount("node1", "n1");
  const size_t n = ObjectGroups::kMaxMembers;
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) keys.push_back("m" + std::to_string(i));
  PutGroup(keys, Groups(std::vector<std::string>(n, "big")), 64);
  const uint64_t used = Used();
  auto r = Put1("w", "one_more", 64, kT0, false, Groups({"big"}));
  EXPECT_EQ(r.code(), static_cast<int32_t>(ErrorCode::INVALID_PARAMS));
  EXPECT_NE(r.message().find("group big has 1024 members"), std::string::npos) << r.message();
  EXPECT_EQ(Used(), used);  // nothing reserved
  EXPECT_EQ(Present("one_more"), 0);
  // A member's own upsert replaces it and keeps it in the group.
  r = Put1("w", "m0", 64, At(1), /*upsert=*/true, Groups({"big"}));
  EXPECT_EQ(r.code(), 0) << r.message();
  PutEnd("w", {"m0"}, {}, At(1));
  EXPECT_EQ(Present("m0"), 1);
  // An upsert of an object outside the full group leaves that object in place.
  PutComplete("w", "outside", 64);
  r = Put1("w", "outside", 64, At(1), /*upsert=*/true, Groups({"big"}));
  EXPECT_EQ(r.code(), static_cast<int32_t>(ErrorCode::INVALID_PARAMS));
  EXPECT_EQ(Present("outside"), 1);
  // Another group still takes members.
  EXPECT_EQ(Put1("w", "small", 64, kT0, false, Groups({"other"})).code(), 0);
}

// A group whose members live on different segments: evicting one member frees all of them.
TEST_F(GroupTest, AGroupIsEvictedTogetherAcrossSegments) {
  Mount("node1", "n1", 8192);
  Mount("node2", "n2", 8192);
  rpc::ReplicateConfig kv = Groups({"page7"});
  kv.add_preferred_segments("n1");
  PutGroup({"kv"}, kv, 1024, At(0));  // oldest: evicted first
  rpc::ReplicateConfig state = Groups({"page7"});
  state.add_preferred_segments("n2");
  PutGroup({"mamba"}, state, 1024, At(5));  // young, on the other segment
  for (int i = 0; i < 14; ++i) PutComplete("w", "fill" + std::to_string(i), 1024, At(5));
  ASSERT_EQ(Used(), 16u * 1024);
  // A put that needs room evicts "kv", the least recently used; "mamba" goes with it.
  auto r = Put1("w", "new", 1024, At(6));
  EXPECT_EQ(r.code(), 0) << r.message();
  EXPECT_EQ(Exists1("kv"), 0);
  EXPECT_EQ(Exists1("mamba"), 0);
  EXPECT_EQ(Used(), 15u * 1024);  // 16 - kv - mamba + new
}

// A lease on one member holds the whole group: neither is evicted while a reader reads one.
TEST_F(GroupTest, ALeaseOnOneMemberHoldsItsGroup) {
  Mount("node1", "n1", 4096);
  PutGroup({"kv", "state"}, Groups({"g", "g"}), 1024, At(0));
  PutComplete("w", "other", 1024, At(1));
  PutComplete("w", "other2", 1024, At(1));
  rpc::KeysRequest req = Keys({"kv"});
  req.set_client_id("r");
  rpc::GetReplicaListReply got = core_.GetReplicaList(req, At(2));
  ASSERT_NE(got.lease_id(), 0u);
  EXPECT_EQ(core_.bytes_leased(), 2048u);  // both members
  EXPECT_EQ(Remove1("state", At(2)), ErrorCode::OBJECT_HAS_LEASE);
  // Room for one more object: the unleased "other" goes, not the group.
  auto r = Put1("w", "new", 1024, At(3));
  EXPECT_EQ(r.code(), 0) << r.message();
  EXPECT_EQ(Present("kv"), 1);
  EXPECT_EQ(Present("state"), 1);
  uint64_t id = got.lease_id();
  EXPECT_EQ(core_.ReleaseLeases("r", std::span<const uint64_t>(&id, 1), At(3)), 1u);
  EXPECT_EQ(core_.bytes_leased(), 0u);
  // Unleased now: as puts push the old objects out, the two go together.
  PutEnd("w", {"new"}, {}, At(3));
  for (int i = 0; i < 4; ++i) {
    const std::string k = "later" + std::to_string(i);
    ASSERT_EQ(Put1("w", k, 1024, At(10 + i)).code(), 0);
    PutEnd("w", {k}, {}, At(10 + i));
    EXPECT_EQ(Present("kv"), Present("state")) << i;
  }
  EXPECT_EQ(Present("kv"), 0);
}

TEST_F(GroupTest, SoftPinsLapseAfterTheirTtl) {
  Mount("node1", "n1");
  rpc::ReplicateConfig cfg;
  cfg.set_with_soft_pin(true);
  cfg.set_soft_pin_ttl_ms(1500);
  ASSERT_EQ(Put1("w", "lapses", 100, kT0, false, cfg).code(), 0);
  cfg.set_soft_pin_ttl_ms(0);
  ASSERT_EQ(Put1("w", "stays", 100, kT0, false, cfg).code(), 0);
  PutEnd("w", {"lapses", "stays"});
  Ping("node1", At(1));
  Ping("w", At(1));
  EXPECT_EQ(core_.Housekeeping(At(1)).soft_pins_expired, 0u);
  EXPECT_TRUE(core_.InspectObject("lapses", At(1))->soft_pinned);
  Ping("node1", At(2));
  Ping("w", At(2));
  EXPECT_EQ(core_.Housekeeping(At(2)).soft_pins_expired, 1u);
  EXPECT_FALSE(core_.InspectObject("lapses", At(2))->soft_pinned);
  EXPECT_TRUE(core_.InspectObject("stays", At(2))->soft_pinned);
}

}  // namespace
}  // namespace kvpool::master
