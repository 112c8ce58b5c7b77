// Data-plane grants across real processes (docs/security.md, "Data-plane grants"): tenant-key
// clients read and write their own objects through the nodes as before, while a tenant's raw
// data requests for another tenant's range (its location learnt by a privileged probe) are
// refused with ILLEGAL_CLIENT, whether without a grant or with a grant for its own range, and
// the other tenant's bytes stay as they were. Privileged peers need no grants.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <span>

#include "rpc/connection.h"
#include "rpc/kvpool.pb.h"
#include "secured_pool_test.h"

namespace kvpool::testing {
namespace {

using std::chrono::seconds;

Deadline Soon() { return DeadlineAfter(seconds(30)); }

class TenantGrantTest : public SecuredPoolTest {
 protected:
  void SetUp() override {
    SecuredPoolTest::SetUp();
    StartPool();
  }

  std::unique_ptr<Client> TenantClient(const std::string& tenant) {
    ClientOptions o;
    o.master_server_address = pool_->master_address();
    o.tenant_id = tenant;
    o.tenant_key = TenantKey(tenant);
    auto c = Client::Setup(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  // A raw connection to `ep` as `tenant`: with its tenant key, or (privileged) the pool secret.
  std::unique_ptr<rpc::Connection> Raw(const rpc::Endpoint& ep, const std::string& tenant,
                                       bool privileged) {
    rpc::ConnectOptions o;
    o.tenant_id = tenant;
    o.auth_secret = privileged ? secret_ : TenantKey(tenant);
    o.tenant_key = !privileged;
    auto c = rpc::Connection::Connect(ep, "grant test", Soon(), o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  rpc::Endpoint Master() {
    return rpc::Endpoint{"127.0.0.1",
                         static_cast<uint16_t>(std::stoi(pool_->master_address().substr(10)))};
  }
  // The one replica of `tenant`'s `key`, located over `conn` (to the master) with a lease.
  static rpc::Replica Locate(rpc::Connection& conn, const std::string& key) {
    rpc::KeysRequest req;
    req.set_client_id("grant-test-probe");
    req.add_keys(key);
    rpc::GetReplicaListReply reply;
    Status st = conn.Call(rpc::GET_REPLICA_LIST, req, &reply, Soon());
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (reply.objects_size() != 1 || reply.objects(0).replicas_size() != 1) {
      ADD_FAILURE() << key << ": not located";
      return rpc::Replica();
    }
    return reply.objects(0).replicas(0);
  }
  static rpc::DataRequest Request(const rpc::Replica& where, const rpc::Grant* grant) {
    rpc::DataRequest req;
    req.set_segment_name(where.segment_name());
    req.set_segment_incarnation(where.segment_incarnation());
    rpc::Range* r = req.add_ranges();
    r->set_offset(where.offset());
    r->set_length(where.length());
    if (grant != nullptr) *r->mutable_grant() = *grant;
    return req;
  }
  static Status Read(rpc::Connection& node, const rpc::DataRequest& req,
                     std::vector<uint8_t>& into) {
    iovec v{into.data(), into.size()};
    rpc::Empty resp;
    return node.Call(rpc::READ, req, &resp, {}, {&v, 1}, Soon());
  }
  static Status Write(rpc::Connection& node, const rpc::DataRequest& req,
                      std::vector<uint8_t>& from) {
    iovec v{from.data(), from.size()};
    rpc::Empty resp;
    return node.Call(rpc::WRITE, req, &resp, {&v, 1}, {}, Soon());
  }
  static void ExpectRefused(const Status& st, const rpc::Replica& where) {
    EXPECT_EQ(st.code(), ErrorCode::ILLEGAL_CLIENT) << st.ToString();
    std::string range = "segment=" + where.segment_name() +
                        " offset=" + std::to_string(where.offset()) +
                        " length=" + std::to_string(where.length());
    EXPECT_NE(st.message().find(range), std::string::npos) << st.ToString();
  }
};

TEST_F(TenantGrantTest, TenantsUseTheirOwnRangesOnlyOnTheDataPlane) {
  auto a = TenantClient("a");
  auto b = TenantClient("b");
  ASSERT_TRUE(a && b);
  // Tenants put and get through the node as usual: the master's grants ride along.
  for (Client* c : {a.get(), b.get()}) {
    const std::string key = c == a.get() ? "page-a" : "page-b";
    auto bytes = ObjectBytes(key, 1, kPage);
    ASSERT_TRUE(c->BatchPut({key}, {std::span<const uint8_t>(bytes)})[0].ok()) << key;
    auto got = c->BatchGet({key})[0];
    ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
    EXPECT_EQ(*got, bytes) << key;
  }

  // A privileged probe learns where B's object lives; A learns (with a grant) where its own is.
  auto probe = Raw(Master(), "b", /*privileged=*/true);
  auto a_master = Raw(Master(), "a", /*privileged=*/false);
  ASSERT_TRUE(probe && a_master);
  const rpc::Replica b_where = Locate(*probe, "page-b");
  const rpc::Replica a_where = Locate(*a_master, "page-a");
  EXPECT_FALSE(b_where.has_grant());  // privileged: no grants
  ASSERT_TRUE(a_where.has_grant());
  ASSERT_EQ(a_where.segment_name(), b_where.segment_name());  // one node holds both
  auto ep = rpc::ParseEndpoint(b_where.endpoint(), 0, "node");
  ASSERT_TRUE(ep.ok());

  // As tenant A, raw requests for B's range: refused, whatever A attaches.
  auto a_node = Raw(*ep, "a", /*privileged=*/false);
  ASSERT_TRUE(a_node);
  std::vector<uint8_t> buf(b_where.length(), 0);
  ExpectRefused(Read(*a_node, Request(b_where, nullptr), buf), b_where);
  ExpectRefused(Read(*a_node, Request(b_where, &a_where.grant()), buf), b_where);
  std::vector<uint8_t> junk(b_where.length(), 0xee);
  ExpectRefused(Write(*a_node, Request(b_where, nullptr), junk), b_where);
  ExpectRefused(Write(*a_node, Request(b_where, &a_where.grant()), junk), b_where);
  EXPECT_EQ(buf, std::vector<uint8_t>(b_where.length(), 0));
  // A's own READ grant does not let it overwrite its own object either.
  ExpectRefused(Write(*a_node, Request(a_where, &a_where.grant()), junk), a_where);

  // The same connection (the refused payloads were drained) reads A's own range with its grant.
  std::vector<uint8_t> mine(a_where.length());
  Status st = Read(*a_node, Request(a_where, &a_where.grant()), mine);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(mine, ObjectBytes("page-a", 1, kPage));

  // B's bytes are as B put them; a privileged peer reads them without a grant.
  auto got = b->BatchGet({"page-b"})[0];
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, ObjectBytes("page-b", 1, kPage));
  auto privileged_node = Raw(*ep, "", /*privileged=*/true);
  ASSERT_TRUE(privileged_node);
  st = Read(*privileged_node, Request(b_where, nullptr), buf);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(buf, ObjectBytes("page-b", 1, kPage));
}

}  // namespace
}  // namespace kvpool::testing
