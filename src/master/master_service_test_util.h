// Test helpers for the master over real sockets: a Master on 127.0.0.1 port 0, and a fixture
// for the calls answered only once segment hosts applied their journal entries.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "master/master.h"
#include "master_client/master_client.h"

namespace kvpool::master::testing {

inline MasterOptions TestOptions() {
  MasterOptions o;
  o.rpc_host = "127.0.0.1";
  o.rpc_port = 0;
  o.metrics_port = 0;  // tests run in parallel: never the fixed default
  return o;
}

inline Deadline Soon() { return DeadlineAfter(std::chrono::seconds(5)); }

class MasterServiceTest : public ::testing::Test {
 protected:
  explicit MasterServiceTest(const MasterOptions& o = TestOptions()) : master_(o) {}
  void SetUp() override {
    ASSERT_TRUE(master_.Start().ok());
    ep_ = rpc::Endpoint{"127.0.0.1", master_.port()};
  }
  Master master_;
  rpc::Endpoint ep_;
};

// A put is acknowledged once a host holding one of its replicas has recorded the commit in its
// object list (acknowledged its journal entry): a master that dies or loses its leadership
// right after the acknowledgement loses no acknowledged put, as the next one rebuilds from
// those lists.
inline MasterOptions CommitAckOptions() {
  MasterOptions o = TestOptions();
  o.commit_ack_timeout = std::chrono::milliseconds(400);
  return o;
}

class CommitAckTest : public MasterServiceTest {
 protected:
  CommitAckTest() : MasterServiceTest(CommitAckOptions()) {}
  // A ping of a segment host acknowledging the journal of its segment `segment` up to `applied`
  // (no long poll).
  rpc::PingReply HostPing(MasterClient& node, uint64_t applied,
                          const std::string& segment = "seg") {
    rpc::Ping req;
    rpc::JournalAck* ack = req.add_journal_acks();
    ack->set_segment_name(segment);
    ack->set_applied_seq(applied);
    auto r = node.Ping(std::move(req), Soon());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : rpc::PingReply();
  }
  void PutStart(MasterClient& client, const std::string& key) {
    std::vector<MasterClient::PutItem> items = {{key, 4096}};
    auto put = client.PutStart(items, rpc::ReplicateConfig(), false, Soon());
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    ASSERT_EQ(put->results(0).code(), 0);
  }
};

}  // namespace kvpool::master::testing
