// The master's grants (master/grant_issuer.h): WRITE grants for PUT_START locations, READ
// grants for GET_REPLICA_LIST locations, each valid for the work it covers plus a margin (and
// bounded), verifiable by a segment host with the pool secret.
#include "master/grant_issuer.h"

#include <gtest/gtest.h>

namespace kvpool::master {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kSecret = "pool secret";
constexpr uint64_t kNow = 1'800'000'000'000;

rpc::Replica ReplicaAt(const std::string& segment, uint64_t offset, uint64_t length) {
  rpc::Replica r;
  r.set_segment_name(segment);
  r.set_endpoint("127.0.0.1:7001");
  r.set_offset(offset);
  r.set_length(length);
  return r;
}

// The grant of `replica` as a segment host checks it: for the replica's whole range.
Status HostCheck(const rpc::Replica& replica, rpc::GrantMode mode, uint64_t now_ms) {
  rpc::Range range;
  range.set_offset(replica.offset());
  range.set_length(replica.length());
  if (replica.has_grant()) *range.mutable_grant() = replica.grant();
  return rpc::GrantKey(kSecret).Check(replica.segment_name(), replica.segment_incarnation(), range,
                                      mode, now_ms);
}

MasterOptions Options() {
  MasterOptions o;
  o.security.auth_secret = kSecret;
  return o;
}

TEST(GrantIssuerTest, PutStartLocationsGetWriteGrants) {
  GrantIssuer issuer = GrantIssuer::For(Options());
  rpc::PutStartReply reply;
  auto* result = reply.add_results();
  *result->add_replicas() = ReplicaAt("seg-a", 4096, 1000);
  *result->add_replicas() = ReplicaAt("seg-b", 0, 1000);
  reply.add_results()->set_already_exists(true);  // nothing to write: no replicas, no grants
  issuer.Attach(reply, kNow);
  for (const rpc::Replica& r : reply.results(0).replicas()) {
    ASSERT_TRUE(r.has_grant());
    EXPECT_EQ(r.grant().mode(), static_cast<uint32_t>(rpc::GrantMode::kWrite));
    EXPECT_EQ(r.grant().offset(), r.offset());
    EXPECT_EQ(r.grant().length(), r.length());
    // The put discard timeout (30 s by default) plus the margin.
    EXPECT_EQ(r.grant().expiry_ms(), kNow + 30000 + GrantIssuer::kMargin.count());
    EXPECT_TRUE(HostCheck(r, rpc::GrantMode::kWrite, kNow).ok());
    EXPECT_EQ(HostCheck(r, rpc::GrantMode::kRead, kNow).code(), ErrorCode::ILLEGAL_CLIENT);
  }
}

TEST(GrantIssuerTest, ReplicaListLocationsGetReadGrants) {
  GrantIssuer issuer = GrantIssuer::For(Options());
  rpc::GetReplicaListReply reply;
  *reply.add_objects()->add_replicas() = ReplicaAt("seg-a", 8192, 500);
  reply.add_objects()->set_code(static_cast<int32_t>(ErrorCode::OBJECT_NOT_FOUND));
  issuer.Attach(reply, kNow);
  const rpc::Replica& r = reply.objects(0).replicas(0);
  ASSERT_TRUE(r.has_grant());
  EXPECT_EQ(r.grant().mode(), static_cast<uint32_t>(rpc::GrantMode::kRead));
  // The lease TTL (10 s by default) plus the margin.
  const uint64_t expiry = kNow + 10000 + GrantIssuer::kMargin.count();
  EXPECT_EQ(r.grant().expiry_ms(), expiry);
  EXPECT_TRUE(HostCheck(r, rpc::GrantMode::kRead, kNow).ok());
  // Past its expiry and the clock-skew allowance a host refuses it.
  const uint64_t skew = static_cast<uint64_t>(rpc::kGrantClockSkew.count());
  EXPECT_TRUE(HostCheck(r, rpc::GrantMode::kRead, expiry + skew).ok());
  EXPECT_EQ(HostCheck(r, rpc::GrantMode::kRead, expiry + skew + 1).code(),
            ErrorCode::ILLEGAL_CLIENT);
}

TEST(GrantIssuerTest, ValidityFollowsTheOptionsAndIsBounded) {
  MasterOptions o = Options();
  o.default_kv_lease_ttl = milliseconds(2000);
  o.put_start_discard_timeout_sec = seconds(60);
  GrantIssuer g = GrantIssuer::For(o);
  EXPECT_TRUE(g.enabled());
  EXPECT_EQ(g.read_validity(), milliseconds(2000) + GrantIssuer::kMargin);
  EXPECT_EQ(g.write_validity(), seconds(60) + GrantIssuer::kMargin);
  o.default_kv_lease_ttl = std::chrono::hours(1);
  o.put_start_discard_timeout_sec = std::chrono::hours(24);
  GrantIssuer capped = GrantIssuer::For(o);
  EXPECT_EQ(capped.read_validity(), GrantIssuer::kMaxValidity);
  EXPECT_EQ(capped.write_validity(), GrantIssuer::kMaxValidity);
}

TEST(GrantIssuerTest, NoSecretIssuesNothing) {
  GrantIssuer none;
  EXPECT_FALSE(none.enabled());
  EXPECT_FALSE(GrantIssuer::For(MasterOptions()).enabled());
  rpc::PutStartReply reply;
  *reply.add_results()->add_replicas() = ReplicaAt("seg-a", 0, 10);
  none.Attach(reply, kNow);
  EXPECT_FALSE(reply.results(0).replicas(0).has_grant());
}

}  // namespace
}  // namespace kvpool::master
