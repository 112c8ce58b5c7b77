// The master hands grants to tenant connections only: WRITE grants with PUT_START locations,
// READ grants with a leased GET_REPLICA_LIST, each checkable by a segment host with the pool
// secret; privileged connections' replies are untouched.
#include <gtest/gtest.h>

#include "master/master_service.h"
#include "master/master_test_util.h"

namespace kvpool::master {
namespace {

constexpr const char* kGrantSecret = "pool secret";

class MasterServiceGrantTest : public ::testing::Test {
 protected:
  static MasterOptions Options() {
    MasterOptions o;
    o.security.auth_secret = kGrantSecret;
    return o;
  }
  void SetUp() override {
    ASSERT_EQ(
        service_.Dispatch(rpc::MOUNT_SEGMENT, testing::TestSegmentMount().SerializeAsString()).code,
        ErrorCode::OK);
  }
  // The reply to `method` with `req` as the server hands it back to a connection.
  rpc::Reply Call(uint16_t method, const google::protobuf::MessageLite& req, bool privileged) {
    rpc::ConnectionContext context;
    context.privileged = privileged;
    context.tenant_id = privileged ? "" : "tenant-a";
    rpc::FrameHeader h;
    h.method = method;
    const std::string meta = req.SerializeAsString();
    asio::io_context io;
    asio::ip::tcp::socket unused(io);
    rpc::PayloadReader payload(unused, 0);
    rpc::Reply reply;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          reply = co_await service_.HandleFrom(context, h, meta, payload);
        },
        asio::detached);
    io.run();
    return reply;
  }
  rpc::PutStartReply PutStart(const std::string& key, bool privileged) {
    rpc::PutStart ps;
    ps.set_client_id("c");
    auto* item = ps.add_items();
    item->set_key(key);
    item->set_size(1000);
    rpc::Reply r = Call(rpc::PUT_START, ps, privileged);
    EXPECT_EQ(r.code, ErrorCode::OK) << r.message;
    rpc::PutStartReply reply;
    EXPECT_TRUE(reply.ParseFromString(r.meta));
    return reply;
  }
  // Commits `key` in the namespace of the privileged (default) or the tenant connection.
  void Commit(const std::string& key, bool privileged = true) {
    rpc::PutEnd pe;
    pe.set_client_id("c");
    pe.add_commit_keys(key);
    rpc::Reply r = Call(rpc::PUT_END, pe, privileged);
    ASSERT_EQ(r.code, ErrorCode::OK);
    rpc::CodesReply codes;
    ASSERT_TRUE(codes.ParseFromString(r.meta));
    ASSERT_EQ(codes.codes(0), 0);
  }
  rpc::GetReplicaListReply Locate(const std::string& key, bool privileged, bool no_lease = false) {
    rpc::KeysRequest req;
    req.set_client_id("c");
    req.add_keys(key);
    req.set_no_lease(no_lease);
    rpc::Reply r = Call(rpc::GET_REPLICA_LIST, req, privileged);
    EXPECT_EQ(r.code, ErrorCode::OK) << r.message;
    rpc::GetReplicaListReply reply;
    EXPECT_TRUE(reply.ParseFromString(r.meta));
    return reply;
  }
  // The grant of `replica` as a segment host checks it: for the replica's whole range.
  static Status HostCheck(const rpc::Replica& replica, rpc::GrantMode mode) {
    rpc::Range range;
    range.set_offset(replica.offset());
    range.set_length(replica.length());
    if (replica.has_grant()) *range.mutable_grant() = replica.grant();
    return rpc::GrantKey(kGrantSecret)
        .Check(replica.segment_name(), replica.segment_incarnation(), range, mode,
               rpc::UnixMillisNow());
  }

  MasterOptions options_ = Options();
  MasterCore core_{options_};
  MasterService service_{&core_, &Clock::now, GrantIssuer::For(options_)};
};

TEST_F(MasterServiceGrantTest, TenantPutStartCarriesWriteGrants) {
  const uint64_t before = rpc::UnixMillisNow();
  rpc::PutStartReply reply = PutStart("k", /*privileged=*/false);
  ASSERT_EQ(reply.results_size(), 1);
  ASSERT_EQ(reply.results(0).replicas_size(), 1);
  const rpc::Replica& r = reply.results(0).replicas(0);
  ASSERT_TRUE(r.has_grant());
  EXPECT_EQ(r.grant().mode(), static_cast<uint32_t>(rpc::GrantMode::kWrite));
  EXPECT_GE(r.grant().expiry_ms(), before + 30000);  // at least the put discard timeout
  EXPECT_TRUE(HostCheck(r, rpc::GrantMode::kWrite).ok());
  EXPECT_EQ(HostCheck(r, rpc::GrantMode::kRead).code(), ErrorCode::ILLEGAL_CLIENT);
}

TEST_F(MasterServiceGrantTest, TenantLeasedReadCarriesReadGrants) {
  PutStart("k", false);  // the tenant's own object (tenants see only their own keys)
  Commit("k", false);
  rpc::GetReplicaListReply reply = Locate("k", /*privileged=*/false);
  ASSERT_EQ(reply.objects_size(), 1);
  ASSERT_EQ(reply.objects(0).replicas_size(), 1);
  const rpc::Replica& r = reply.objects(0).replicas(0);
  ASSERT_TRUE(r.has_grant());
  EXPECT_EQ(r.grant().mode(), static_cast<uint32_t>(rpc::GrantMode::kRead));
  EXPECT_TRUE(HostCheck(r, rpc::GrantMode::kRead).ok());
  EXPECT_EQ(HostCheck(r, rpc::GrantMode::kWrite).code(), ErrorCode::ILLEGAL_CLIENT);
  // A metadata-only lookup (no lease keeps the range) grants nothing.
  rpc::GetReplicaListReply meta = Locate("k", false, /*no_lease=*/true);
  ASSERT_EQ(meta.objects(0).replicas_size(), 1);
  EXPECT_FALSE(meta.objects(0).replicas(0).has_grant());
}

TEST_F(MasterServiceGrantTest, PrivilegedCallersGetNoGrants) {
  rpc::PutStartReply put = PutStart("k", /*privileged=*/true);
  ASSERT_EQ(put.results(0).replicas_size(), 1);
  EXPECT_FALSE(put.results(0).replicas(0).has_grant());
  Commit("k");
  rpc::GetReplicaListReply got = Locate("k", /*privileged=*/true);
  ASSERT_EQ(got.objects(0).replicas_size(), 1);
  EXPECT_FALSE(got.objects(0).replicas(0).has_grant());
}

TEST_F(MasterServiceGrantTest, ErrorRepliesAndOtherMethodsAreUntouched) {
  rpc::PutStart no_client;  // INVALID_PARAMS: no client id
  rpc::Reply r = Call(rpc::PUT_START, no_client, false);
  EXPECT_EQ(r.code, ErrorCode::INVALID_PARAMS);
  rpc::Reply stat = Call(rpc::STAT, rpc::Empty(), false);
  EXPECT_EQ(stat.code, ErrorCode::OK);
  rpc::StatReply s;
  ASSERT_TRUE(s.ParseFromString(stat.meta));
  EXPECT_EQ(s.segments_size(), 1);
}

// Only a pool component's report of an unreachable segment takes it out of placement: a
// tenant's client, which proved only its tenant key, cannot steer the pool's writes away from a
// healthy node.
TEST_F(MasterServiceGrantTest, OnlyPoolComponentsReportSegmentsUnreachable) {
  rpc::PutEnd report;
  report.set_client_id("c");
  report.add_unreachable_segments("seg");
  ASSERT_EQ(Call(rpc::PUT_END, report, /*privileged=*/false).code, ErrorCode::OK);
  rpc::PutStartReply after_tenant = PutStart("k1", /*privileged=*/false);
  ASSERT_EQ(after_tenant.results_size(), 1);
  EXPECT_EQ(after_tenant.results(0).replicas_size(), 1) << "a tenant's report was believed";

  ASSERT_EQ(Call(rpc::PUT_END, report, /*privileged=*/true).code, ErrorCode::OK);
  rpc::Reply r = Call(
      rpc::PUT_START,
      [] {
        rpc::PutStart ps;
        ps.set_client_id("c");
        auto* item = ps.add_items();
        item->set_key("k2");
        item->set_size(1000);
        return ps;
      }(),
      /*privileged=*/true);
  rpc::PutStartReply after_pool;
  ASSERT_TRUE(after_pool.ParseFromString(r.meta));
  ASSERT_EQ(after_pool.results_size(), 1);
  EXPECT_EQ(after_pool.results(0).replicas_size(), 0) << "the pool component's report was not";
}

}  // namespace
}  // namespace kvpool::master
