// Calls answered only once segment hosts applied their journal entries (MasterService::Handle):
// a PUT_END once a host holds each commit, a PUT_START that replaced objects (upsert), a REMOVE
// and a REMOVE_ALL once the hosts of what they freed dropped it. So a master that dies or loses
// its leadership right after answering loses no acknowledged put, and brings back no version a
// client replaced or removed: the next master rebuilds from those hosts' lists.
#include <gtest/gtest.h>

#include <future>
#include <limits>
#include <memory>
#include <tuple>

#include "master/master_service.h"
#include "master/master_service_test_util.h"

namespace kvpool::master {
namespace {

using testing::CommitAckTest;
using testing::Soon;

TEST_F(CommitAckTest, PutEndAnswersOnceTheHostRecordedTheCommit) {
  MasterClient node(ep_, "node-1");
  MasterClient client(ep_, "client-1");
  ASSERT_TRUE(node.Ping(Soon()).ok());
  ASSERT_TRUE(node.MountSegment("seg", "127.0.0.1:7001", 1 << 20, Soon()).ok());
  HostPing(node, 0);  // the host keeps an object list: it acknowledges its journal
  PutStart(client, "page-0");

  std::vector<std::string> commit = {"page-0"}, none;
  std::vector<uint64_t> checksums = {7};
  auto end = std::async(std::launch::async,
                        [&] { return client.PutEnd(commit, checksums, none, Soon()); });
  EXPECT_EQ(end.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout)
      << "answered before any host recorded the commit";
  rpc::PingReply collected = HostPing(node, 0);
  ASSERT_EQ(collected.journals_size(), 1);
  ASSERT_EQ(collected.journals(0).entries_size(), 1);
  EXPECT_EQ(collected.journals(0).entries(0).key(), "page-0");
  HostPing(node, collected.journals(0).entries(0).seq());  // applied: the put is safe now
  ASSERT_EQ(end.wait_for(std::chrono::milliseconds(300)), std::future_status::ready)
      << "still waiting after the host acknowledged the commit";
  auto r = end.get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->codes(0), 0);
  EXPECT_EQ(master_.metrics().commits_unacked(), 0u);
}

TEST_F(CommitAckTest, ACommitNoHostRecordsIsRpcTimeoutButStaysCommitted) {
  MasterClient node(ep_, "node-1");
  MasterClient client(ep_, "client-1");
  ASSERT_TRUE(node.Ping(Soon()).ok());
  ASSERT_TRUE(node.MountSegment("seg", "127.0.0.1:7001", 1 << 20, Soon()).ok());
  HostPing(node, 0);
  PutStart(client, "page-0");
  PutStart(client, "page-1");
  std::vector<std::string> commit = {"page-0"}, revoke = {"page-1"};
  std::vector<uint64_t> checksums = {7};
  const auto t0 = Clock::now();
  auto r = client.PutEnd(commit, checksums, revoke, Soon());  // the host never pings again
  const auto waited = Clock::now() - t0;
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(static_cast<ErrorCode>(r->codes(0)), ErrorCode::RPC_TIMEOUT);
  EXPECT_NE(r->messages(0).find("--commit_ack_timeout_ms"), std::string::npos) << r->messages(0);
  EXPECT_EQ(r->codes(1), 0);  // a revoke waits for nothing
  EXPECT_GE(waited, std::chrono::milliseconds(390));
  EXPECT_LT(waited, std::chrono::seconds(3));
  EXPECT_EQ(master_.metrics().commits_unacked(), 1u);
  EXPECT_EQ(master_.metrics().errors(MetricMethod::kPutEnd, ErrorCode::RPC_TIMEOUT), 1u);
  // Still committed here: a retried put finds it, and the host may yet record it.
  std::vector<std::string> keys = {"page-0"};
  auto exists = client.Exists(keys, Soon());
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(exists->codes(0), 1);
}

// A host that lists the objects written to it (MountSegment.records_writes) holds an object
// before its writer's PUT_END: the commit is answered at once, with nothing left to wait for,
// and PUT_START tells the writer where the journal stood (the host's record outranks older
// entries). A segment without it gets neither.
TEST_F(CommitAckTest, ACommitItsHostListedOnWriteIsAnsweredAtOnce) {
  MasterClient node(ep_, "node-1");
  MasterClient client(ep_, "client-1");
  ASSERT_TRUE(node.Ping(Soon()).ok());
  rpc::MountSegment mount;
  mount.set_segment_name("seg");
  mount.set_endpoint("127.0.0.1:7001");
  mount.set_size(1 << 20);
  mount.set_records_writes(true);
  ASSERT_TRUE(node.MountSegmentAs(mount, Soon()).ok());
  HostPing(node, 0);  // the host keeps an object list; it never acknowledges again
  std::vector<uint64_t> checksums = {7};
  std::vector<char> listed = {1};
  std::vector<std::string> none;
  for (uint64_t round = 0; round < 2; ++round) {
    std::string key = "page-" + std::to_string(round);
    std::vector<MasterClient::PutItem> items = {{key, 4096}};
    auto put = client.PutStart(items, rpc::ReplicateConfig(), false, Soon());
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    ASSERT_EQ(put->results(0).replicas_size(), 1);
    const rpc::Replica& replica = put->results(0).replicas(0);
    EXPECT_TRUE(replica.host_records_writes());
    EXPECT_EQ(replica.journal_seq(), round);  // the first commit's entry is seq 1
    std::vector<std::string> commit = {key};
    const auto t0 = Clock::now();
    auto r = client.PutEnd(commit, checksums, none, Soon(), {}, listed);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->codes(0), 0) << r->messages(0);
    EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(300)) << "waited for an ack";
  }
  EXPECT_EQ(master_.metrics().commits_unacked(), 0u);
  EXPECT_EQ(master_.metrics().commits_listed_on_write(), 2u);

  // A segment whose host does not list: its replicas ask for no record.
  MasterClient other(ep_, "node-2");
  ASSERT_TRUE(other.Ping(Soon()).ok());
  ASSERT_TRUE(node.DrainSegment("seg", false, Soon()).ok());
  ASSERT_TRUE(other.MountSegment("seg-2", "127.0.0.1:7002", 1 << 20, Soon()).ok());
  std::vector<MasterClient::PutItem> items = {{"page-x", 4096}};
  auto put = client.PutStart(items, rpc::ReplicateConfig(), false, Soon());
  ASSERT_TRUE(put.ok());
  ASSERT_EQ(put->results(0).replicas_size(), 1);
  EXPECT_EQ(put->results(0).replicas(0).segment_name(), "seg-2");
  EXPECT_FALSE(put->results(0).replicas(0).host_records_writes());
  EXPECT_EQ(put->results(0).replicas(0).journal_seq(), 0u);
}

// Two segment hosts that keep object lists, "seg-a" and "seg-b", and a writer.
class FreeAckTest : public CommitAckTest {
 protected:
  void SetUp() override {
    CommitAckTest::SetUp();
    host_a_ = std::make_unique<MasterClient>(ep_, "node-a");
    host_b_ = std::make_unique<MasterClient>(ep_, "node-b");
    client_ = std::make_unique<MasterClient>(ep_, "client-1");
    for (auto [host, name, port] :
         {std::tuple{host_a_.get(), "seg-a", 7001}, std::tuple{host_b_.get(), "seg-b", 7002}}) {
      ASSERT_TRUE(host->Ping(Soon()).ok());
      ASSERT_TRUE(
          host->MountSegment(name, "127.0.0.1:" + std::to_string(port), 1 << 20, Soon()).ok());
      HostPing(*host, 0, name);  // it keeps an object list: it acknowledges its journal
    }
  }
  MasterClient& HostOf(const std::string& segment) {
    return segment == "seg-a" ? *host_a_ : *host_b_;
  }
  // Everything journalled for `segment` so far, acknowledged as applied by its host.
  void HostApplies(const std::string& segment) {
    HostPing(HostOf(segment), std::numeric_limits<uint64_t>::max(), segment);
  }
  // An upsert of `key` placed on `segment`, answered (the test's hosts acknowledging nothing).
  Result<rpc::PutStartReply> Upsert(const std::string& key, const std::string& segment) {
    rpc::ReplicateConfig cfg;
    cfg.add_preferred_segments(segment);
    std::vector<MasterClient::PutItem> items = {{key, 4096}};
    return client_->PutStart(items, cfg, /*upsert=*/true, Soon());
  }
  // Puts `key` on `segment` and commits it, its host applying the commit.
  void PutOn(const std::string& key, const std::string& segment) {
    auto put = Upsert(key, segment);
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    ASSERT_EQ(put->results(0).code(), 0) << put->results(0).message();
    ASSERT_EQ(put->results(0).replicas(0).segment_name(), segment);
    std::vector<std::string> commit = {key}, none;
    std::vector<uint64_t> checksums = {7};
    auto end = std::async(std::launch::async,
                          [&] { return client_->PutEnd(commit, checksums, none, Soon()); });
    while (end.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
      HostApplies(segment);
    }
    auto r = end.get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->codes(0), 0);
  }
  std::unique_ptr<MasterClient> host_a_, host_b_, client_;
};

TEST_F(FreeAckTest, AnUpsertIsAnsweredOnceTheReplacedReplicasHostDroppedIt) {
  // Nothing replaced, nothing to wait for (the hosts acknowledge nothing from here on).
  auto fresh = Upsert("other", "seg-b");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->results(0).code(), 0);
  PutOn("page", "seg-a");

  const auto t0 = Clock::now();
  auto upsert = std::async(std::launch::async, [&] { return Upsert("page", "seg-b"); });
  EXPECT_EQ(upsert.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout)
      << "answered before seg-a's host dropped the replaced object";
  rpc::PingReply collected = HostPing(*host_a_, 0, "seg-a");
  ASSERT_EQ(collected.journals_size(), 1);
  const auto& entries = collected.journals(0).entries();
  ASSERT_FALSE(entries.empty());
  EXPECT_TRUE(entries.rbegin()->freed());
  HostPing(*host_a_, entries.rbegin()->seq(), "seg-a");  // applied: the old version is gone
  ASSERT_EQ(upsert.wait_for(std::chrono::milliseconds(300)), std::future_status::ready)
      << "still waiting after the host dropped the replaced object";
  auto r = upsert.get();
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(390)) << "waited for the timeout";
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->results(0).code(), 0);
  EXPECT_EQ(r->results(0).replicas(0).segment_name(), "seg-b");
  EXPECT_EQ(master_.metrics().frees_unacked(), 0u);
}

TEST_F(FreeAckTest, RemovesWaitForTheHostsUpToTheTimeout) {
  PutOn("page-a", "seg-a");
  PutOn("page-b", "seg-b");
  // seg-a's host never applies the remove: answered, as it is, after --commit_ack_timeout_ms.
  std::vector<std::string> keys = {"page-a"};
  const auto t0 = Clock::now();
  auto removed = client_->Remove(keys, /*force=*/false, Soon());
  const auto waited = Clock::now() - t0;
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(removed->codes(0), 0);
  EXPECT_GE(waited, std::chrono::milliseconds(390));
  EXPECT_LT(waited, std::chrono::seconds(3));
  EXPECT_EQ(master_.metrics().frees_unacked(), 1u);

  // Remove-all: answered once seg-b's host dropped page-b.
  auto all = std::async(std::launch::async, [&] { return client_->RemoveAll(false, Soon()); });
  EXPECT_EQ(all.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  HostApplies("seg-b");
  ASSERT_EQ(all.wait_for(std::chrono::milliseconds(300)), std::future_status::ready);
  auto n = all.get();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1u);
  EXPECT_EQ(master_.metrics().frees_unacked(), 1u);
}

}  // namespace
}  // namespace kvpool::master
