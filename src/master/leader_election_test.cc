// LeaderElection and HaService against a scripted coordinator (no etcd): who may serve when,
// and the epoch stamped on answers.
#include "master/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "master/ha_service.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::master {
namespace {

using std::chrono::milliseconds;

// A coordinator whose answers the test sets.
struct Script {
  std::atomic<bool> reachable{true};
  std::atomic<bool> leader_taken{false};  // someone else leads
  std::atomic<bool> lease_alive{true};
  std::atomic<int> renewals{0};
  std::atomic<bool> stale_self{false};  // the record names 127.0.0.1:5 (a lost term), epoch 9
  std::atomic<int> cleared{0};
  std::atomic<int> resigned{0};
};

class FakeCoordinator : public ha::Coordinator {
 public:
  explicit FakeCoordinator(Script* s) : s_(s) {}
  Result<ha::CampaignResult> Campaign(std::string_view address, Deadline) override {
    if (!s_->reachable) return Status(ErrorCode::ETCD_OPERATION_ERROR, "down");
    ha::CampaignResult r;
    if (s_->stale_self) {
      r.leader = {"127.0.0.1:5", 9};
      return r;
    }
    if (s_->leader_taken) {
      r.leader = {"10.0.0.9:1", 7};
      return r;
    }
    r.won = true;
    r.leader = {std::string(address), 42};
    return r;
  }
  Result<bool> Renew(Deadline) override {
    if (!s_->reachable) return Status(ErrorCode::ETCD_OPERATION_ERROR, "down");
    ++s_->renewals;
    return s_->lease_alive.load();
  }
  Status Resign(Deadline) override {
    if (!s_->reachable) return Status(ErrorCode::ETCD_OPERATION_ERROR, "down");
    ++s_->resigned;
    return Status::Ok();
  }
  Result<ha::LeaderRecord> Leader(Deadline) override {
    if (!s_->reachable) return Status(ErrorCode::ETCD_OPERATION_ERROR, "down");
    if (s_->stale_self) return ha::LeaderRecord{"127.0.0.1:5", 9};
    return ha::LeaderRecord{};
  }
  Status ClearStale(const ha::LeaderRecord& stale, Deadline) override {
    if (!s_->reachable) return Status(ErrorCode::ETCD_OPERATION_ERROR, "down");
    if (s_->stale_self && stale.address == "127.0.0.1:5" && stale.epoch == 9) {
      s_->stale_self = false;
      ++s_->cleared;
    }
    return Status::Ok();
  }
  std::chrono::seconds lease_ttl() const override { return std::chrono::seconds(1); }
  std::string Describe() const override { return "etcd://fake/c"; }

 private:
  Script* s_;
};

ElectionOptions Fast(milliseconds restore = milliseconds(0)) {
  ElectionOptions o;
  o.poll_interval = milliseconds(20);
  o.fence_margin = milliseconds(300);
  o.restore_wait = restore;
  return o;
}

bool WaitFor(const std::function<bool()>& f, milliseconds timeout = milliseconds(3000)) {
  auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return false;
}

TEST(LeaderElectionTest, StandbyRefusesWithNotLeaderNamingTheLeader) {
  Script s;
  s.leader_taken = true;
  LeaderElection e(std::make_unique<FakeCoordinator>(&s), Fast(), nullptr);
  ASSERT_TRUE(e.Start("127.0.0.1:5", DeadlineAfter(milliseconds(500))).ok());
  ASSERT_TRUE(WaitFor([&] { return e.view().leader == "10.0.0.9:1"; }));
  Status st = e.Admit(rpc::GET_REPLICA_LIST);
  EXPECT_EQ(st.code(), ErrorCode::NOT_LEADER);
  EXPECT_NE(st.message().find("10.0.0.9:1 epoch=7"), std::string::npos) << st.message();
  EXPECT_EQ(e.view().role, "standby");
  EXPECT_EQ(e.serving_epoch(), 0u);
}

// Issue 33: a record naming this master while it is a standby is a term it lost (its lease
// outlived an etcd outage): cleared at once, then the election goes on, instead of waiting a
// lease period; meanwhile it never reports itself as the leader.
TEST(LeaderElectionTest, AStaleRecordOfItsOwnLostTermIsClearedNotWaitedFor) {
  Script s;
  s.stale_self = true;
  LeaderElection e(std::make_unique<FakeCoordinator>(&s), Fast(), nullptr);
  ASSERT_TRUE(e.Start("127.0.0.1:5", DeadlineAfter(milliseconds(500))).ok());
  ASSERT_TRUE(WaitFor([&] { return e.serving_epoch() == 42u; }));
  EXPECT_EQ(s.cleared.load(), 1);
}

// A leader whose lease is gone revokes it when the coordinator answers (it was left to lapse).
TEST(LeaderElectionTest, ALostLeaderRevokesItsLease) {
  Script s;
  std::atomic<bool> lost_called{false};
  LeaderElection e(std::make_unique<FakeCoordinator>(&s), Fast(), [&] { lost_called = true; });
  ASSERT_TRUE(e.Start("127.0.0.1:5", DeadlineAfter(milliseconds(500))).ok());
  ASSERT_TRUE(WaitFor([&] { return e.Admit(rpc::PUT_START).ok(); }));
  s.lease_alive = false;
  ASSERT_TRUE(WaitFor([&] { return lost_called.load(); }));
  EXPECT_GE(s.resigned.load(), 1);
  EXPECT_EQ(e.Admit(rpc::PUT_START).code(), ErrorCode::NOT_LEADER);
}

TEST(LeaderElectionTest, NewLeaderServesNodesFirstThenKeys) {
  Script s;
  LeaderElection e(std::make_unique<FakeCoordinator>(&s), Fast(milliseconds(1000)), nullptr);
  ASSERT_TRUE(e.Start("127.0.0.1:5", DeadlineAfter(milliseconds(500))).ok());
  ASSERT_TRUE(WaitFor([&] { return e.Admit(rpc::MOUNT_SEGMENT).ok(); }));
  EXPECT_EQ(e.serving_epoch(), 42u);
  EXPECT_TRUE(e.Admit(rpc::PING).ok());
  EXPECT_EQ(e.Admit(rpc::PUT_START).code(), ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  EXPECT_EQ(e.view().role, "restoring");
  ASSERT_TRUE(WaitFor([&] { return e.Admit(rpc::PUT_START).ok(); }));
  EXPECT_EQ(e.view().role, "leader");
  EXPECT_EQ(e.view().leader, "127.0.0.1:5");
  EXPECT_TRUE(WaitFor([&] { return s.renewals.load() >= 2; }));
  EXPECT_TRUE(e.Admit(rpc::GET_REPLICA_LIST).ok());  // renewed: still serving
}

TEST(LeaderElectionTest, LeaderThatCannotRenewStopsBeforeTheLeaseLapsesAndIsLost) {
  Script s;
  std::atomic<bool> lost_called{false};
  LeaderElection e(std::make_unique<FakeCoordinator>(&s), Fast(), [&] { lost_called = true; });
  ASSERT_TRUE(e.Start("127.0.0.1:5", DeadlineAfter(milliseconds(500))).ok());
  ASSERT_TRUE(WaitFor([&] { return e.Admit(rpc::PUT_START).ok(); }));
  const auto cut = Clock::now();
  s.reachable = false;
  ASSERT_TRUE(WaitFor([&] { return !e.Admit(rpc::PUT_START).ok(); }));
  // TTL 1 s, margin 300 ms: serving ends by 700 ms after the last renewal sent (<= cut).
  EXPECT_LT(Clock::now() - cut, milliseconds(800));
  EXPECT_EQ(e.Admit(rpc::PUT_START).code(), ErrorCode::NOT_LEADER);
  ASSERT_TRUE(WaitFor([&] { return e.lost(); }));
  // lost() turns true just before the callback runs, on the election's thread.
  EXPECT_TRUE(WaitFor([&] { return lost_called.load(); }));
  s.reachable = true;  // never leads again in this process
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(e.Admit(rpc::PING).code(), ErrorCode::NOT_LEADER);
  EXPECT_EQ(e.view().role, "lost");
}

TEST(LeaderElectionTest, LeaseGoneIsLostAtOnce) {
  Script s;
  LeaderElection e(std::make_unique<FakeCoordinator>(&s), Fast(), nullptr);
  ASSERT_TRUE(e.Start("127.0.0.1:5", DeadlineAfter(milliseconds(500))).ok());
  ASSERT_TRUE(WaitFor([&] { return e.Admit(rpc::PUT_START).ok(); }));
  s.lease_alive = false;
  ASSERT_TRUE(WaitFor([&] { return e.lost(); }, milliseconds(1000)));
  EXPECT_EQ(e.Admit(rpc::PUT_START).code(), ErrorCode::NOT_LEADER);
}

TEST(LeaderElectionTest, UnreachableCoordinatorFailsStart) {
  Script s;
  s.reachable = false;
  LeaderElection e(std::make_unique<FakeCoordinator>(&s), Fast(), nullptr);
  Status st = e.Start("127.0.0.1:5", DeadlineAfter(milliseconds(500)));
  EXPECT_EQ(st.code(), ErrorCode::ETCD_OPERATION_ERROR);
  EXPECT_NE(st.message().find("etcd://fake/c"), std::string::npos) << st.message();
}

TEST(HaServiceTest, StampedEpochParsesInEveryReplyThatCarriesIt) {
  rpc::PingReply ping;
  ping.set_master_epoch(5);
  rpc::Reply reply = rpc::Reply::Of(ping);
  HaService::Stamp(rpc::PING, 1234567890123ull, HaView{}, reply);
  rpc::PingReply back;
  ASSERT_TRUE(back.ParseFromString(reply.meta));
  EXPECT_EQ(back.master_epoch(), 5u);
  EXPECT_EQ(back.leader_epoch(), 1234567890123ull);

  rpc::Reply stat = rpc::Reply::Of(rpc::StatReply());
  HaService::Stamp(rpc::STAT, 9, HaView{"leader", 9, "127.0.0.1:7", "etcd://x/c"}, stat);
  rpc::StatReply s;
  ASSERT_TRUE(s.ParseFromString(stat.meta));
  EXPECT_EQ(s.leader_epoch(), 9u);
  EXPECT_EQ(s.ha_role(), "leader");
  EXPECT_EQ(s.leader_address(), "127.0.0.1:7");

  rpc::Reply error = rpc::Reply::Error(Status(ErrorCode::INVALID_PARAMS, "x"));
  const std::string before = error.meta;
  HaService::Stamp(rpc::PING, 9, HaView{}, error);
  EXPECT_EQ(error.meta, before);  // errors carry ErrorInfo: left alone
}

}  // namespace
}  // namespace kvpool::master
