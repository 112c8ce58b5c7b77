// Tenant namespaces on the master over real sockets: a master with a pool secret, a node that
// proves the secret (privileged) and tenant clients that prove only their tenant keys.
#include "master/tenant_scope.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/tenant_key.h"
#include "master/master.h"
#include "master_client/master_client.h"
#include "rpc/auth.h"

namespace kvpool::master {
namespace {

using namespace std::string_literals;

constexpr const char* kPoolSecret = "pool-secret";
Deadline Soon() { return DeadlineAfter(std::chrono::seconds(10)); }

class TenantScopeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MasterOptions o;
    o.rpc_host = "127.0.0.1";
    o.rpc_port = 0;
    o.metrics_port = 0;
    o.security.auth_secret = kPoolSecret;
    master_ = std::make_unique<Master>(o);
    ASSERT_TRUE(master_->Start().ok());
    ep_ = rpc::Endpoint{"127.0.0.1", master_->port()};
    node_ = Stub("node", "", /*tenant_key=*/false);
    ASSERT_TRUE(node_->MountSegment("127.0.0.1:7001", "127.0.0.1:7001", 1 << 20, Soon()).ok());
  }

  // A stub for `tenant` proving the pool secret, or (tenant_key) only the tenant's key.
  std::unique_ptr<MasterClient> Stub(const std::string& id, const std::string& tenant,
                                     bool tenant_key) {
    rpc::ConnectOptions c;
    c.tenant_id = tenant;
    c.tenant_key = tenant_key;
    c.auth_secret = tenant_key ? rpc::DeriveTenantKey(kPoolSecret, tenant) : kPoolSecret;
    auto pool = std::make_shared<rpc::ConnectionPool>(id, 4, c);
    return std::make_unique<MasterClient>(ep_, id, pool);
  }

  // Puts `key` (size bytes) as `who` and commits it.
  void Put(MasterClient& who, const std::string& key, uint64_t size) {
    std::vector<MasterClient::PutItem> items = {{key, size}};
    auto put = who.PutStart(items, rpc::ReplicateConfig(), false, Soon());
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    ASSERT_EQ(put->results(0).code(), 0) << put->results(0).message();
    ASSERT_FALSE(put->results(0).already_exists()) << key;
    std::vector<std::string> commit = {key};
    auto end = who.PutEnd(commit, {}, {}, Soon());
    ASSERT_TRUE(end.ok());
    ASSERT_EQ(end->codes(0), 0);
  }

  std::unique_ptr<Master> master_;
  rpc::Endpoint ep_;
  std::unique_ptr<MasterClient> node_;
};

TEST_F(TenantScopeTest, TenantsDoNotSeeEachOthersKeys) {
  auto a = Stub("a", "a", true);
  auto b = Stub("b", "b", true);
  auto def = Stub("d", "", true);
  Put(*a, "page", 100);
  std::vector<std::string> keys = {"page"};
  // B: not found, not existing, not a prefix, not removable; its own put of the same key is a
  // new object (not "already exists").
  auto got = b->GetReplicaList(keys, false, Soon());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(static_cast<ErrorCode>(got->objects(0).code()), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(got->objects(0).message().find('\0'), std::string::npos);
  EXPECT_NE(got->objects(0).message().find("key=page "), std::string::npos)
      << got->objects(0).message();
  EXPECT_EQ(b->Exists(keys, Soon())->codes(0), 0);
  EXPECT_EQ(*b->ExistsPrefix(keys, Soon()), 0u);
  EXPECT_EQ(static_cast<ErrorCode>(b->Remove(keys, true, Soon())->codes(0)),
            ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(*b->RemoveAll(true, Soon()), 0u);
  EXPECT_EQ(def->Exists(keys, Soon())->codes(0), 0);
  EXPECT_EQ(node_->Exists(keys, Soon())->codes(0), 0);  // the pool secret's default tenant
  Put(*b, "page", 200);
  EXPECT_EQ(a->GetReplicaList(keys, true, Soon())->objects(0).size(), 100u);
  EXPECT_EQ(b->GetReplicaList(keys, true, Soon())->objects(0).size(), 200u);
  // A's own view is intact; its remove-all removes only its own objects.
  EXPECT_EQ(a->Exists(keys, Soon())->codes(0), 1);
  EXPECT_EQ(*a->RemoveAll(true, Soon()), 1u);
  EXPECT_EQ(a->Exists(keys, Soon())->codes(0), 0);
  EXPECT_EQ(b->Exists(keys, Soon())->codes(0), 1);
  // A privileged connection names tenants' objects by their internal keys.
  std::vector<std::string> internal = {MakeTenantKey("b", "page")};
  EXPECT_EQ(node_->Exists(internal, Soon())->codes(0), 1);
}

TEST_F(TenantScopeTest, DefaultRemoveAllKeepsTenantsObjects) {
  auto a = Stub("a", "a", true);
  Put(*a, "page", 100);
  Put(*node_, "page", 100);
  EXPECT_EQ(*node_->RemoveAll(true, Soon()), 1u);
  std::vector<std::string> keys = {"page"};
  EXPECT_EQ(a->Exists(keys, Soon())->codes(0), 1);
}

TEST_F(TenantScopeTest, TenantCannotSendInternalKeys) {
  auto a = Stub("a", "a", true);
  Put(*Stub("b", "b", true), "page", 100);
  std::vector<std::string> keys = {MakeTenantKey("b", "page"), "ok"};
  auto exists = a->Exists(keys, Soon());
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(static_cast<ErrorCode>(exists->codes(0)), ErrorCode::INVALID_KEY);
  EXPECT_NE(exists->messages(0).find("NUL"), std::string::npos) << exists->messages(0);
  EXPECT_EQ(exists->codes(1), 0);
  auto got = a->GetReplicaList(keys, false, Soon());
  EXPECT_EQ(static_cast<ErrorCode>(got->objects(0).code()), ErrorCode::INVALID_KEY);
  std::vector<MasterClient::PutItem> items = {{keys[0], 10}};
  auto put = a->PutStart(items, rpc::ReplicateConfig(), false, Soon());
  EXPECT_EQ(static_cast<ErrorCode>(put->results(0).code()), ErrorCode::INVALID_KEY);
  // The default tenant's key holders are confined too.
  EXPECT_EQ(static_cast<ErrorCode>(Stub("d", "", true)->Exists(keys, Soon())->codes(0)),
            ErrorCode::INVALID_KEY);
}

TEST_F(TenantScopeTest, TenantMayNotHostSegments) {
  auto a = Stub("a", "a", true);
  EXPECT_EQ(a->MountSegment("127.0.0.1:7002", "127.0.0.1:7002", 1 << 20, Soon()).code(),
            ErrorCode::ILLEGAL_CLIENT);
  // Not even someone else's segment, by its owner's client id.
  auto spoof = Stub("node", "a", true);
  EXPECT_EQ(spoof->UnmountSegment("127.0.0.1:7001", Soon()).code(), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(spoof->DrainSegment("127.0.0.1:7001", false, Soon()).code(), ErrorCode::ILLEGAL_CLIENT);
  // Nor keep a (possibly dead) host's segments alive by pinging as it.
  EXPECT_EQ(spoof->Ping(Soon()).status().code(), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_TRUE(node_->Ping(Soon()).ok());
  EXPECT_TRUE(a->Ping(Soon()).ok());
}

TEST_F(TenantScopeTest, TenantKeyForAnotherTenantIsRefused) {
  rpc::ConnectOptions c;
  c.tenant_id = "b";
  c.tenant_key = true;
  c.auth_secret = rpc::DeriveTenantKey(kPoolSecret, "a");
  MasterClient wrong(ep_, "x", std::make_shared<rpc::ConnectionPool>("x", 4, c));
  EXPECT_EQ(wrong.Ping(Soon()).code(), ErrorCode::ILLEGAL_CLIENT);
}

}  // namespace
}  // namespace kvpool::master
