// MasterCore over time: dead clients, stale reservations, watermark eviction, and a
// concurrency smoke test.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "master/master_core.h"
#include "master/master_test_util.h"

namespace kvpool::master {
namespace {

using testing::At;
using testing::Code;
using testing::CoreTest;
using testing::kT0;

TEST_F(CoreTest, DeadClientLosesSegmentsReplicasAndReservations) {
  Mount("node1", "n1");
  Mount("node2", "n2");
  rpc::ReplicateConfig two;
  two.set_replica_num(2);
  // "both" has a replica on each node; "only1" lives on n1 alone.
  auto both = Put1("w", "both", 100, kT0, false, two);
  ASSERT_EQ(both.replicas_size(), 2);
  PutEnd("w", {"both"});
  rpc::ReplicateConfig on1;
  on1.add_preferred_segments("n1");
  ASSERT_EQ(Put1("w", "only1", 100, kT0, false, on1).replicas(0).segment_name(), "n1");
  PutEnd("w", {"only1"});
  rpc::ReplicateConfig on2;
  on2.add_preferred_segments("n2");
  // w dies before committing this one.
  ASSERT_EQ(Put1("w", "pending", 100, kT0, false, on2).replicas(0).segment_name(), "n2");
  uint64_t used_before = Used();

  // node2 keeps pinging; node1 and the writer were last heard from at kT0 (client_ttl 10 s).
  for (int s = 1; s <= 11; ++s) {
    Ping("node2", At(s));
    HousekeepingReport r = core_.Housekeeping(At(s));
    if (s != 10) {
      EXPECT_EQ(r.dead_clients, 0u) << s;
      continue;
    }
    EXPECT_EQ(r.dead_clients, 2u);  // node1 and w
    EXPECT_EQ(r.segments_unmounted, 1u);
    EXPECT_EQ(r.objects_dropped, 2u);  // "only1" lost its only replica; "pending" revoked
  }
  EXPECT_EQ(Code(Get1("only1", At(11)).code()), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Code(Get1("pending", At(11)).code()), ErrorCode::OBJECT_NOT_FOUND);
  auto g = Get1("both", At(11));
  ASSERT_EQ(g.code(), 0);
  ASSERT_EQ(g.replicas_size(), 1);
  EXPECT_EQ(g.replicas(0).segment_name(), "n2");
  rpc::StatReply s = core_.Stat();
  EXPECT_EQ(s.segments_size(), 1);
  // On n2: both's replica, and pending's space until its put start +
  // put_start_release_timeout (bytes the dead writer sent may still arrive).
  EXPECT_EQ(s.used(), 256u);
  EXPECT_LT(s.used(), used_before);
  // The dead node comes back: it is unknown, so it must mount again.
  rpc::Ping p;
  p.set_client_id("node1");
  EXPECT_FALSE(core_.Ping(p, At(12))->client_known());
}

TEST_F(CoreTest, StaleReservationIsTakenOverAfterDiscardTimeout) {
  Mount("node1", "n1", 4096);
  auto first = Put1("slow", "k", 1024);
  ASSERT_EQ(first.code(), 0);
  EXPECT_TRUE(Put1("fast", "k", 1024, At(29.9)).already_exists());
  auto taken = Put1("fast", "k", 1024, At(30));
  ASSERT_EQ(taken.code(), 0);
  EXPECT_FALSE(taken.already_exists());
  // The slow writer may still be writing: its range is not handed out again yet.
  EXPECT_NE(taken.replicas(0).offset(), first.replicas(0).offset());
  EXPECT_EQ(Code(PutEnd("slow", {"k"}, {}, At(31)).codes(0)), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(PutEnd("fast", {"k"}, {}, At(31)).codes(0), 0);
  EXPECT_EQ(Used(), 2048u);
  // Keep everyone alive, then pass the release timeout (600 s after the first put start).
  Ping("node1", At(599));
  EXPECT_EQ(core_.Housekeeping(At(599)).deferred_frees, 0u);
  Ping("node1", At(600));
  EXPECT_EQ(core_.Housekeeping(At(600)).deferred_frees, 1u);
  EXPECT_EQ(Used(), 1024u);
  EXPECT_EQ(Get1("k", At(600)).code(), 0);
}

TEST_F(CoreTest, UpsertAlsoTakesOverAStaleReservation) {
  Mount("node1", "n1");
  ASSERT_EQ(Put1("slow", "k", 100).code(), 0);
  EXPECT_EQ(Code(Put1("w", "k", 100, At(10), true).code()), ErrorCode::REPLICA_IS_NOT_READY);
  EXPECT_EQ(Put1("w", "k", 100, At(31), true).code(), 0);
}

TEST_F(CoreTest, AbandonedReservationIsReclaimedAtReleaseTimeout) {
  Mount("node1", "n1");
  ASSERT_EQ(Put1("w", "k", 100).code(), 0);
  for (double t : {100.0, 300.0, 599.0}) {
    Ping("node1", At(t));
    Ping("w", At(t));
    EXPECT_EQ(core_.Housekeeping(At(t)).reservations_reclaimed, 0u);
  }
  Ping("node1", At(600));
  Ping("w", At(600));
  EXPECT_EQ(core_.Housekeeping(At(600)).reservations_reclaimed, 1u);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Code(PutEnd("w", {"k"}, {}, At(601)).codes(0)), ErrorCode::OBJECT_NOT_FOUND);
}

// Pool at 91%: one round frees 5% of capacity, oldest first, keeping leased and pending ones.
TEST_F(CoreTest, WatermarkEvictionFreesAboutTheRatio) {
  Mount("node1", "n1", 100 * 1024);
  for (int i = 0; i < 80; ++i) PutComplete("w", "old" + std::to_string(i), 1024, At(i * 0.01));
  for (int i = 0; i < 6; ++i) ASSERT_EQ(Put1("w", "pend" + std::to_string(i), 1024).code(), 0);
  for (int i = 0; i < 5; ++i) {
    PutComplete("w", "hot" + std::to_string(i), 1024);
    Get1("hot" + std::to_string(i), At(0.5));  // leased until At(10.5)
  }
  ASSERT_EQ(Used(), 91u * 1024);
  // At(3): every "old" object is idle for more than --eviction_min_age_ms (2 s).
  Ping("node1", At(3));
  Ping("w", At(3));
  HousekeepingReport r = core_.Housekeeping(At(3));
  EXPECT_EQ(r.evicted.objects, 5u);  // 5% of 100 KiB = 5 objects
  EXPECT_EQ(Used(), 86u * 1024);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Exists1("hot" + std::to_string(i)), 1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Exists1("old" + std::to_string(i)), 0);
  EXPECT_EQ(Exists1("old5"), 1);
  EXPECT_EQ(core_.Stat().object_count(), 86u);
  EXPECT_EQ(core_.Housekeeping(At(3.1)).evicted.objects, 0u);  // below the watermark now
}

// Several threads put, get and remove distinct and shared keys; the space accounting must
// balance at the end.
TEST_F(CoreTest, ConcurrencySmoke) {
  Mount("node1", "n1", 4 << 20);
  Mount("node2", "n2", 4 << 20);
  constexpr int kThreads = 4, kRounds = 1500;
  std::atomic<int> failures{0};
  auto work = [&](int t) {
    std::string client = "c" + std::to_string(t);
    for (int i = 0; i < kRounds; ++i) {
      auto now = Clock::now();
      std::string mine = client + "-" + std::to_string(i % 50);
      std::string shared = "shared-" + std::to_string(i % 20);
      auto r = PutStart(client, {mine, shared}, 4096, now);
      if (r.results_size() != 2) {
        ++failures;
        continue;
      }
      std::vector<std::string> commit;
      if (r.results(0).code() == 0 && !r.results(0).already_exists()) commit.push_back(mine);
      if (r.results(1).code() == 0 && !r.results(1).already_exists()) commit.push_back(shared);
      auto e = PutEnd(client, commit, {}, now);
      for (int32_t c : e.codes()) failures += c != 0;
      core_.GetReplicaList(CoreTest::Keys({mine, shared}, false, /*no_lease=*/i % 2 == 0), now);
      core_.Exists(CoreTest::Keys({shared}), now);
      if (i % 3 == 0) core_.Remove(CoreTest::Keys({mine, shared}, /*force=*/true), now);
      if (t == 0 && i % 50 == 0) core_.Housekeeping(now);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  // Forced removes of leased objects free their space when the leases end: past every lease.
  const auto later = Clock::now() + options_.default_kv_lease_ttl + std::chrono::seconds(1);
  Ping("node1", later);
  Ping("node2", later);
  core_.Housekeeping(later);
  rpc::StatReply s = core_.Stat();
  EXPECT_EQ(s.used(), s.object_count() * 4096);  // one 4 KiB replica per object
  rpc::RemoveAll all;
  all.set_force(true);
  core_.RemoveAll(all, later);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(core_.Stat().object_count(), 0u);
}

}  // namespace
}  // namespace kvpool::master
