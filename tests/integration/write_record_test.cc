// Commits recorded on write (docs/failure-model.md): a node lists an object as its WRITE
// completes, so the master answers the writer's PUT_END without waiting for the node to
// acknowledge the commit's journal entry, and a successor master still learns of the object.
// Run in one process so the node's heartbeat can be left out: the node acknowledges its journal
// once and never again, which makes "the master did not wait" and "the node never heard of the
// commit" certain rather than a race. The master, the segment host with its data server and
// the client are the real ones, over real sockets.
#include <gtest/gtest.h>

#include "common/checksum.h"
#include "hosting/segment_host.h"
#include "kvpool/client.h"
#include "master/master.h"
#include "master_client/master_client.h"
#include "rpc/connection_pool.h"
#include "rpc/endpoint.h"
#include "test_bytes.h"
#include "transfer/tcp_transport.h"

namespace kvpool::testing {
namespace {

Deadline Soon() { return DeadlineAfter(std::chrono::seconds(10)); }

master::MasterOptions MasterOn(uint16_t port) {
  master::MasterOptions o;
  o.rpc_host = "127.0.0.1";
  o.rpc_port = port;
  o.metrics_port = 0;
  o.enable_http_admin = false;
  o.commit_ack_timeout = std::chrono::seconds(20);  // far beyond what the test allows a put
  return o;
}

// The ping a node's heartbeat sends, without its long poll: it acknowledges the host's journal
// as applied so far.
void PingOnce(hosting::SegmentHost& host, master::MasterClient& stub) {
  rpc::Ping ping;
  host.AddJournalAcks(&ping);
  auto r = stub.Ping(std::move(ping), Soon());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  host.ApplyJournals(*r);
}

std::unique_ptr<Client> ClientOf(uint16_t master_port) {
  ClientOptions o;
  o.master_server_address = "127.0.0.1:" + std::to_string(master_port);
  o.rpc_timeout = std::chrono::seconds(30);
  o.verify_checksum = true;
  auto c = Client::Setup(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c).value() : nullptr;
}

TEST(WriteRecordTest, AnAcknowledgedPutSurvivesAMasterItsNodeNeverAcknowledged) {
  auto first = std::make_unique<master::Master>(MasterOn(0));
  ASSERT_TRUE(first->Start().ok());
  const uint16_t port = first->port();
  hosting::SegmentHostOptions ho;
  ho.bind_host = "127.0.0.1";
  ho.size = 64 << 20;
  auto host = hosting::SegmentHost::Start(ho);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  auto stub = std::make_unique<master::MasterClient>(rpc::Endpoint{"127.0.0.1", port}, "node-1");
  ASSERT_TRUE((*host)->Mount(*stub, Soon()).ok());
  PingOnce(**host, *stub);  // the master now counts the node as one that keeps an object list

  const std::vector<std::string> keys = {"page-a", "page-b", "page-c"};
  std::vector<std::vector<uint8_t>> values;
  for (size_t i = 0; i < keys.size(); ++i) values.push_back(ObjectBytes(keys[i], 0, (i + 1) << 20));
  {
    auto writer = ClientOf(port);
    ASSERT_NE(writer, nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < keys.size(); ++i) {
      auto st = writer->BatchPut({keys[i]}, {std::span<const uint8_t>(values[i])});
      ASSERT_TRUE(st[0].ok()) << keys[i] << ": " << st[0].ToString();
    }
    // Waiting for an acknowledgement would have taken commit_ack_timeout (20 s) and failed.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  }
  EXPECT_EQ(first->metrics().commits_unacked(), 0u);
  EXPECT_EQ(first->metrics().commits_listed_on_write(), keys.size());
  EXPECT_EQ((*host)->objects().size(), keys.size()) << "listed as written, before any journal";
  EXPECT_EQ((*host)->objects().applied_seq(), 0u) << "the node heard of no commit";

  // The master dies; its successor (a new process epoch, same port) rebuilds from the node.
  first->Stop();
  first.reset();
  master::Master second(MasterOn(port));
  ASSERT_TRUE(second.Start().ok());
  stub = std::make_unique<master::MasterClient>(rpc::Endpoint{"127.0.0.1", port}, "node-1");
  ASSERT_TRUE((*host)->Mount(*stub, Soon()).ok());
  auto reader = ClientOf(port);
  ASSERT_NE(reader, nullptr);
  auto got = reader->BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << got[i].status().ToString();
    EXPECT_EQ(*got[i], values[i]) << keys[i];
  }
  EXPECT_TRUE(reader->Close().ok());
  EXPECT_TRUE((*host)->Unmount(*stub, Soon()).ok());
}

// A leader cut off from the nodes keeps placing puts until its fence, while the nodes have
// moved to its successor. A write it placed must not be listed: no master would ever hear of
// it, so its put must wait for an acknowledgement that never comes, and fail.
TEST(WriteRecordTest, AWritePlacedByAMasterTheNodeLeftIsNotListed) {
  master::MasterOptions quick = MasterOn(0);
  quick.commit_ack_timeout = std::chrono::milliseconds(300);
  master::Master old_leader(quick);
  ASSERT_TRUE(old_leader.Start().ok());
  master::Master successor(MasterOn(0));
  ASSERT_TRUE(successor.Start().ok());
  hosting::SegmentHostOptions ho;
  ho.bind_host = "127.0.0.1";
  ho.size = 16 << 20;
  auto host = hosting::SegmentHost::Start(ho);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  master::MasterClient to_old(rpc::Endpoint{"127.0.0.1", old_leader.port()}, "node-1");
  ASSERT_TRUE((*host)->Mount(to_old, Soon()).ok());
  PingOnce(**host, to_old);

  // The writer reserves at the old leader; then the node moves to the successor.
  master::MasterClient writer(rpc::Endpoint{"127.0.0.1", old_leader.port()}, "writer");
  std::vector<master::MasterClient::PutItem> items = {{"page-late", 4096}};
  auto put = writer.PutStart(items, rpc::ReplicateConfig(), false, Soon());
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  ASSERT_EQ(put->results(0).replicas_size(), 1);
  const rpc::Replica& replica = put->results(0).replicas(0);
  ASSERT_TRUE(replica.host_records_writes());
  master::MasterClient to_successor(rpc::Endpoint{"127.0.0.1", successor.port()}, "node-1");
  ASSERT_TRUE((*host)->Mount(to_successor, Soon()).ok());

  // The write lands, but the node does not list it.
  std::vector<uint8_t> bytes = ObjectBytes("page-late", 0, 4096);
  const uint64_t checksum = ChecksumOf(bytes.data(), bytes.size());
  rpc::ConnectionPool pool("writer");
  transfer::TcpTransport tcp(&pool);
  auto ep = rpc::ParseEndpoint(replica.endpoint(), 0, "replica");
  ASSERT_TRUE(ep.ok());
  rpc::Range range;
  range.set_offset(replica.offset());
  range.set_length(replica.length());
  range.set_journal_seq(replica.journal_seq());
  range.set_master_epoch(replica.master_epoch());
  std::vector<rpc::Range> ranges{range};
  std::vector<std::string_view> keys{"page-late"};
  const std::function<void(size_t, size_t)> before = [](size_t, size_t) {};
  const std::function<uint64_t(size_t)> sum = [&](size_t) { return checksum; };
  bool recorded = true;
  transfer::SegmentRanges where{&replica.segment_name(), &*ep, ranges,
                                replica.segment_incarnation()};
  where.before_ranges = &before;
  where.record_keys = &keys;
  where.record_checksum = &sum;
  where.recorded = &recorded;
  iovec v{bytes.data(), bytes.size()};
  ASSERT_TRUE(tcp.Write(where, {&v, 1}, Soon()).ok());
  EXPECT_FALSE(recorded);
  EXPECT_EQ((*host)->objects().size(), 0u);

  // So the old leader does not acknowledge the put: no host recorded it.
  std::vector<std::string> commit = {"page-late"}, none;
  std::vector<uint64_t> checksums = {checksum};
  auto ended = writer.PutEnd(commit, checksums, none, Soon());
  ASSERT_TRUE(ended.ok()) << ended.status().ToString();
  EXPECT_EQ(static_cast<ErrorCode>(ended->codes(0)), ErrorCode::RPC_TIMEOUT);
  EXPECT_TRUE((*host)->Unmount(to_successor, Soon()).ok());
}

// An embedded client that hosts the pool's only segment writes into it with memcpy: its own
// segment host lists those objects too, so its puts skip the wait as well.
TEST(WriteRecordTest, AnEmbeddedClientsOwnSegmentListsWhatItWrites) {
  master::Master m(MasterOn(0));
  ASSERT_TRUE(m.Start().ok());
  ClientOptions o;
  o.master_server_address = "127.0.0.1:" + std::to_string(m.port());
  o.global_segment_size = 32 << 20;
  o.verify_checksum = true;
  auto c = Client::Setup(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::vector<std::string> keys = {"own-a", "own-b"};
  std::vector<std::vector<uint8_t>> values = {ObjectBytes("own-a", 0, 4096),
                                              ObjectBytes("own-b", 0, 3 << 20)};
  auto put = (*c)->BatchPut(
      keys, {std::span<const uint8_t>(values[0]), std::span<const uint8_t>(values[1])});
  for (const Status& st : put) ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(m.metrics().commits_listed_on_write(), keys.size());
  auto got = (*c)->BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    EXPECT_EQ(*got[i], values[i]);
  }
  EXPECT_TRUE((*c)->Close().ok());
}

}  // namespace
}  // namespace kvpool::testing
