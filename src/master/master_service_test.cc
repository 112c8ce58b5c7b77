// The master over real sockets: Master on 127.0.0.1 port 0 and MasterClient.
#include "master/master_service.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "common/keys.h"
#include "master/master.h"
#include "master/master_service_test_util.h"
#include "master/master_test_util.h"
#include "master_client/master_client.h"
#include "rpc/connection.h"

namespace kvpool::master {
namespace {

using testing::MasterServiceTest;
using testing::Soon;
using testing::TestOptions;

TEST_F(MasterServiceTest, EndToEndOverSockets) {
  MasterClient node(ep_, "node-1");
  MasterClient client(ep_, "client-1");
  auto ping = node.Ping(Soon());
  ASSERT_TRUE(ping.ok()) << ping.status().ToString();
  EXPECT_FALSE(ping->client_known());
  EXPECT_EQ(ping->master_epoch(), master_.epoch());
  auto mount = node.MountSegment("127.0.0.1:7001", "127.0.0.1:7001", 1 << 20, Soon());
  ASSERT_TRUE(mount.ok()) << mount.status().ToString();
  EXPECT_EQ(mount->master_epoch(), master_.epoch());
  EXPECT_EQ(client.MountSegment("127.0.0.1:7001", "127.0.0.1:7001", 1 << 20, Soon()).code(),
            ErrorCode::SEGMENT_ALREADY_EXISTS);

  std::vector<MasterClient::PutItem> items = {{"page-0", 4096}, {"page-1", 4096}, {"", 1}};
  auto put = client.PutStart(items, rpc::ReplicateConfig(), false, Soon());
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  ASSERT_EQ(put->results_size(), 3);
  EXPECT_EQ(put->results(0).code(), 0);
  EXPECT_EQ(put->results(0).replicas(0).endpoint(), "127.0.0.1:7001");
  EXPECT_EQ(static_cast<ErrorCode>(put->results(2).code()), ErrorCode::INVALID_KEY);
  std::vector<std::string> commit = {"page-0"}, revoke = {"page-1"};
  std::vector<uint64_t> checksums = {0x1234abcdULL};
  auto end = client.PutEnd(commit, checksums, revoke, Soon());
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->codes(0), 0);
  EXPECT_EQ(end->codes(1), 0);

  std::vector<std::string> keys = {"page-0", "page-1"};
  auto got = client.GetReplicaList(keys, false, Soon());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->objects(0).code(), 0);
  EXPECT_EQ(got->objects(0).checksum(), 0x1234abcdULL);  // recorded at commit
  EXPECT_EQ(got->objects(0).size(), 4096u);
  EXPECT_EQ(got->objects(0).replicas(0).offset(), put->results(0).replicas(0).offset());
  EXPECT_EQ(static_cast<ErrorCode>(got->objects(1).code()), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(got->lease_ttl_ms(), 10000u);

  auto exists = client.Exists(keys, Soon());
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(exists->codes(0), 1);
  EXPECT_EQ(exists->codes(1), 0);
  auto prefix = client.ExistsPrefix(keys, Soon());
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(*prefix, 1u);

  auto stat = client.Stat(Soon());
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->object_count(), 1u);
  EXPECT_EQ(stat->segments_size(), 1);
  // The revoked page's space waits for put_start_release_timeout (its writer's bytes may still
  // be on their way), so it still counts.
  EXPECT_EQ(stat->used(), 8192u);
  EXPECT_EQ(stat->capacity(), 1u << 20);

  auto removed = client.Remove(keys, /*force=*/false, Soon());
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(static_cast<ErrorCode>(removed->codes(0)), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(static_cast<ErrorCode>(removed->codes(1)), ErrorCode::OBJECT_NOT_FOUND);
  removed = client.Remove(keys, /*force=*/true, Soon());
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->codes(0), 0);
  auto all = client.RemoveAll(true, Soon());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, 0u);

  EXPECT_EQ(node.UnmountSegment("nope", Soon()).code(), ErrorCode::SEGMENT_NOT_FOUND);
  EXPECT_TRUE(node.UnmountSegment("127.0.0.1:7001", Soon()).ok());
  EXPECT_EQ(client.Stat(Soon())->segments_size(), 0);
}

TEST_F(MasterServiceTest, RefusesWhatItDoesNotServe) {
  auto conn = rpc::Connection::Connect(ep_, "t", Soon());
  ASSERT_TRUE(conn.ok());
  rpc::Empty resp;
  EXPECT_EQ((*conn)->Call(rpc::WRITE, rpc::DataRequest(), &resp, Soon()).code(),
            ErrorCode::NOT_SUPPORTED);
  std::string bytes = "payload";
  iovec iov{bytes.data(), bytes.size()};
  rpc::PingReply pr;
  rpc::Ping ping;
  ping.set_client_id("x");
  EXPECT_EQ((*conn)->Call(rpc::PING, ping, &pr, {&iov, 1}, {}, Soon()).code(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_TRUE((*conn)->Call(rpc::PING, ping, &pr, Soon()).ok());  // the connection survives
  rpc::Empty empty;
  EXPECT_EQ((*conn)->Call(rpc::PUT_START, empty, &resp, Soon()).code(),
            ErrorCode::INVALID_PARAMS);  // no client id
}

// A master's service without sockets: requests go straight to Dispatch.
class MasterServiceDispatchTest : public ::testing::Test {
 protected:
  // Mounts testing::TestSegmentMount (1 MiB "seg").
  void Mount() {
    ASSERT_EQ(
        service_.Dispatch(rpc::MOUNT_SEGMENT, testing::TestSegmentMount().SerializeAsString()).code,
        ErrorCode::OK);
  }
  MasterCore core_{TestOptions()};
  MasterService service_{&core_};
};

TEST_F(MasterServiceDispatchTest, UnparsableRequestIsInvalidParams) {
  const std::string garbage = "\xff\xff\xff\xff";
  for (uint16_t m : {rpc::PING, rpc::MOUNT_SEGMENT, rpc::UNMOUNT_SEGMENT, rpc::PUT_START,
                     rpc::PUT_END, rpc::GET_REPLICA_LIST, rpc::EXISTS, rpc::EXISTS_PREFIX,
                     rpc::REMOVE, rpc::REMOVE_ALL, rpc::STAT}) {
    rpc::Reply r = service_.Dispatch(m, garbage);
    EXPECT_EQ(r.code, ErrorCode::INVALID_PARAMS) << m;
    EXPECT_NE(r.message.find("does not parse"), std::string::npos);
  }
  EXPECT_EQ(service_.Dispatch(999, "").code, ErrorCode::NOT_SUPPORTED);
  EXPECT_EQ(service_.Dispatch(rpc::STAT, "").code, ErrorCode::OK);
}

// EXISTS takes its keys as repeated `keys` or as one `packed_keys` blob, never both; a blob whose
// lengths run past its end is refused whole.
TEST_F(MasterServiceDispatchTest, ExistsTakesPackedOrRepeatedKeys) {
  auto exists = [&](const rpc::KeysRequest& req) {
    rpc::Reply r = service_.Dispatch(rpc::EXISTS, req.SerializeAsString());
    rpc::CodesReply codes;
    if (r.code == ErrorCode::OK) {
      EXPECT_TRUE(codes.ParseFromString(r.meta));
    }
    return std::make_pair(r.code, codes);
  };
  const std::vector<std::string> keys = {"a", "", "b"};
  rpc::KeysRequest packed;
  packed.set_packed_keys(PackKeys(keys));
  auto [code, reply] = exists(packed);
  ASSERT_EQ(code, ErrorCode::OK);
  ASSERT_EQ(reply.codes_size(), 3);
  EXPECT_EQ(reply.codes(0), 0);
  EXPECT_EQ(testing::Code(reply.codes(1)), ErrorCode::INVALID_KEY);
  EXPECT_EQ(reply.codes(2), 0);

  rpc::KeysRequest both = packed;
  both.add_keys("a");
  EXPECT_EQ(exists(both).first, ErrorCode::INVALID_PARAMS);
  rpc::KeysRequest truncated;
  truncated.set_packed_keys(packed.packed_keys().substr(0, 4));  // "b"'s length, no byte
  EXPECT_EQ(exists(truncated).first, ErrorCode::INVALID_PARAMS);
}

TEST(MasterLifecycleTest, PortTakenIsAnError) {
  Master first(TestOptions());
  ASSERT_TRUE(first.Start().ok());
  MasterOptions o = TestOptions();
  o.rpc_port = first.port();
  Master second(o);
  Status st = second.Start();
  EXPECT_EQ(st.code(), ErrorCode::RPC_FAIL);
  EXPECT_NE(st.message().find(std::to_string(first.port())), std::string::npos) << st.message();
  second.Stop();
  first.Stop();
  first.Stop();  // idempotent
}

TEST(MasterLifecycleTest, MetricsPortTakenIsAnErrorAndStartCanBeRetried) {
  Master first(TestOptions());
  ASSERT_TRUE(first.Start().ok());
  ASSERT_NE(first.http_port(), 0);
  MasterOptions o = TestOptions();
  o.metrics_port = first.http_port();
  Master second(o);
  Status st = second.Start();
  EXPECT_EQ(st.code(), ErrorCode::RPC_FAIL);
  EXPECT_NE(st.message().find(std::to_string(first.http_port())), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("--metrics_port"), std::string::npos) << st.message();
  first.Stop();
  // The port is free again: the same master starts now.
  EXPECT_TRUE(second.Start().ok());
  second.Stop();
}

TEST(MasterLifecycleTest, HttpAdminCanBeDisabled) {
  MasterOptions o = TestOptions();
  o.enable_http_admin = false;
  Master master(o);
  ASSERT_TRUE(master.Start().ok());
  EXPECT_EQ(master.http_port(), 0);
}

TEST_F(MasterServiceDispatchTest, CountsRequestsKeysOutcomesAndErrors) {
  Mount();
  rpc::PutStart ps;
  ps.set_client_id("c");
  for (const char* k : {"a", "b", ""}) {
    auto* item = ps.add_items();
    item->set_key(k);
    item->set_size(1000);
  }
  ASSERT_EQ(service_.Dispatch(rpc::PUT_START, ps.SerializeAsString()).code, ErrorCode::OK);
  rpc::PutEnd pe;
  pe.set_client_id("c");
  pe.add_commit_keys("a");
  pe.add_commit_keys("b");
  ASSERT_EQ(service_.Dispatch(rpc::PUT_END, pe.SerializeAsString()).code, ErrorCode::OK);
  rpc::KeysRequest keys;
  for (const char* k : {"a", "b", "missing"}) keys.add_keys(k);
  ASSERT_EQ(service_.Dispatch(rpc::GET_REPLICA_LIST, keys.SerializeAsString()).code, ErrorCode::OK);
  ASSERT_EQ(service_.Dispatch(rpc::EXISTS, keys.SerializeAsString()).code, ErrorCode::OK);
  ASSERT_EQ(service_.Dispatch(rpc::EXISTS_PREFIX, keys.SerializeAsString()).code, ErrorCode::OK);
  EXPECT_EQ(service_.Dispatch(rpc::PUT_START, "\xff").code, ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(service_.Dispatch(rpc::PUT_START, rpc::PutStart().SerializeAsString()).code,
            ErrorCode::INVALID_PARAMS);  // no client id: the whole request is refused

  const MasterMetrics& mm = service_.metrics();
  EXPECT_EQ(mm.requests(MetricMethod::kMountSegment), 1u);
  EXPECT_EQ(mm.requests(MetricMethod::kPutStart), 3u);
  EXPECT_EQ(mm.keys(MetricMethod::kPutStart), 3u);
  EXPECT_EQ(mm.errors(MetricMethod::kPutStart, ErrorCode::INVALID_KEY), 1u);
  EXPECT_EQ(mm.errors(MetricMethod::kPutStart, ErrorCode::INVALID_PARAMS), 2u);
  EXPECT_EQ(mm.keys(MetricMethod::kPutEnd), 2u);
  EXPECT_EQ(mm.keys(MetricMethod::kGetReplicaList), 3u);
  EXPECT_EQ(mm.found(MetricMethod::kGetReplicaList), 2u);
  EXPECT_EQ(mm.errors(MetricMethod::kGetReplicaList, ErrorCode::OBJECT_NOT_FOUND), 1u);
  EXPECT_EQ(mm.found(MetricMethod::kExists), 2u);
  EXPECT_EQ(mm.errors(MetricMethod::kExists, ErrorCode::OBJECT_NOT_FOUND), 0u);  // 0 is no error
  EXPECT_EQ(mm.found(MetricMethod::kExistsPrefix), 2u);
  EXPECT_EQ(service_.Dispatch(999, "").code, ErrorCode::NOT_SUPPORTED);
  EXPECT_EQ(mm.errors(MetricMethod::kOther, ErrorCode::NOT_SUPPORTED), 1u);

  PoolGauges pool;
  pool.stat = core_.Stat();
  std::string text = mm.Render(pool);
  EXPECT_NE(text.find("kvpool_master_requests_total{method=\"put_start\"} 3\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("kvpool_master_errors_total{method=\"get_replica_list\",code=\""
                      "OBJECT_NOT_FOUND\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("kvpool_master_put_reserved_bytes_total 2000\n"), std::string::npos);
  EXPECT_NE(text.find("kvpool_master_get_located_bytes_total 2000\n"), std::string::npos);
  EXPECT_NE(text.find("kvpool_master_segment_capacity_bytes{segment=\"seg\"} 1048576\n"),
            std::string::npos);
  EXPECT_NE(text.find("kvpool_master_request_duration_seconds_count{method=\"put_start\"} 3\n"),
            std::string::npos);
}

// The hints a reply gives on the client's next request (rpc::Reply): after PUT_START, the
// PUT_END is polled for unless the client's write pace says the write outlasts the poll; after
// GET_REPLICA_LIST, no poll when the reads of the located bytes outlast it.
TEST_F(MasterServiceDispatchTest, HintsWhenTheNextRequestFollowsFromTheClientsPace) {
  Mount();
  auto put_start = [&](const char* key, uint32_t pace) {
    rpc::PutStart ps;
    ps.set_client_id("c");
    rpc::PutItem* item = ps.add_items();
    item->set_key(key);
    item->set_size(256 * 1024);
    ps.set_write_pace_ns_per_kib(pace);
    return service_.Dispatch(rpc::PUT_START, ps.SerializeAsString());
  };
  // Pace unknown (an older client): polled for, as before paces.
  rpc::Reply unknown = put_start("a", 0);
  ASSERT_EQ(unknown.code, ErrorCode::OK);
  EXPECT_GT(unknown.next_request_within.count(), 0);
  EXPECT_EQ(unknown.next_request_after.count(), 0);
  // 256 KiB at 400 ns per KiB: ~102 us, within the poll.
  rpc::Reply quick = put_start("b", 400);
  EXPECT_GT(quick.next_request_within.count(), 0);
  // 256 KiB at 4 us per KiB: 1,024 us; not polled for.
  rpc::Reply slow = put_start("c", 4000);
  EXPECT_EQ(slow.next_request_within.count(), 0);
  EXPECT_EQ(slow.next_request_after, std::chrono::microseconds(1024));
  // Sizes and paces from the wire at their extremes: a sum that saturates, a time capped at 1 s.
  {
    rpc::PutStart ps;
    ps.set_client_id("c");
    for (const char* key : {"huge-1", "huge-2"}) {
      rpc::PutItem* item = ps.add_items();
      item->set_key(key);
      item->set_size(UINT64_MAX);
    }
    ps.set_write_pace_ns_per_kib(UINT32_MAX);
    rpc::Reply huge = service_.Dispatch(rpc::PUT_START, ps.SerializeAsString());
    ASSERT_EQ(huge.code, ErrorCode::OK);  // each item is refused on its own
    EXPECT_EQ(huge.next_request_within.count(), 0);
    EXPECT_EQ(huge.next_request_after, std::chrono::seconds(1));
  }
  // A refused PUT_START announces nothing.
  rpc::Reply refused = service_.Dispatch(rpc::PUT_START, "\xff");
  EXPECT_EQ(refused.next_request_within.count() + refused.next_request_after.count(), 0);

  rpc::PutEnd pe;
  pe.set_client_id("c");
  pe.add_commit_keys("a");
  pe.add_commit_keys("b");
  ASSERT_EQ(service_.Dispatch(rpc::PUT_END, pe.SerializeAsString()).code, ErrorCode::OK);
  rpc::KeysRequest get;
  get.set_client_id("r");
  for (const char* k : {"a", "b", "missing"}) get.add_keys(k);
  get.set_read_pace_ns_per_kib(1000);  // 2 x 256 KiB found: 512 us
  rpc::Reply located = service_.Dispatch(rpc::GET_REPLICA_LIST, get.SerializeAsString());
  ASSERT_EQ(located.code, ErrorCode::OK);
  EXPECT_EQ(located.next_request_within.count(), 0);
  EXPECT_EQ(located.next_request_after, std::chrono::microseconds(512));
  get.set_read_pace_ns_per_kib(400);  // 205 us: the idle poll as after any request
  located = service_.Dispatch(rpc::GET_REPLICA_LIST, get.SerializeAsString());
  EXPECT_EQ(located.next_request_within.count() + located.next_request_after.count(), 0);
}

TEST(MasterLifecycleTest, UnreachableMasterFailsByDeadline) {
  MasterClient c(rpc::Endpoint{"127.0.0.1", 1}, "c");
  auto start = Clock::now();
  EXPECT_EQ(c.Ping(DeadlineAfter(std::chrono::milliseconds(500))).code(), ErrorCode::RPC_FAIL);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

// The housekeeping thread expires a silent node (client_ttl 1 s) without any request.
TEST(MasterLifecycleTest, HousekeepingThreadExpiresSilentClients) {
  MasterOptions o = TestOptions();
  o.client_ttl = std::chrono::seconds(1);
  Master master(o);
  ASSERT_TRUE(master.Start().ok());
  MasterClient node({"127.0.0.1", master.port()}, "node");
  ASSERT_TRUE(node.MountSegment("seg", "127.0.0.1:7001", 1 << 20, Soon()).ok());
  auto give_up = Clock::now() + std::chrono::seconds(10);
  int segments = 1;
  while (segments > 0 && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    segments = master.core().Stat().segments_size();
  }
  EXPECT_EQ(segments, 0);
  auto ping = node.Ping(Soon());
  ASSERT_TRUE(ping.ok());
  EXPECT_FALSE(ping->client_known());  // told to mount again
}

}  // namespace
}  // namespace kvpool::master
