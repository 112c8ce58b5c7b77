// Per-tenant accounting and --tenant_quota (docs/security.md, "Quotas"): the ledger follows
// every put, commit, remove and eviction; a put past its tenant's quota evicts that tenant's own
// least recently used unleased objects and otherwise fails with TENANT_QUOTA_EXCEEDED.
#include <gtest/gtest.h>

#include "common/tenant_key.h"
#include "master/master_core.h"
#include "master/master_metrics.h"
#include "master/master_test_util.h"

namespace kvpool::master {
namespace {

using testing::At;
using testing::Code;
using testing::CoreTest;
using testing::kT0;

std::string A(const std::string& key) { return MakeTenantKey("a", key); }
std::string B(const std::string& key) { return MakeTenantKey("b", key); }

MasterOptions QuotaOptions() {
  MasterOptions o;
  o.tenant_quotas["a"] = 3000;
  return o;
}

class QuotaTest : public CoreTest {
 protected:
  QuotaTest() : CoreTest(QuotaOptions()) {}
  TenantUsage UsageOf(std::string_view tenant) {
    auto all = core_.TenantUsages();
    auto it = all.find(tenant);
    return it == all.end() ? TenantUsage{} : it->second;
  }
};

TEST_F(QuotaTest, LedgerFollowsPutCommitRemove) {
  Mount("node1", "n1");
  ASSERT_EQ(Put1("w", A("k"), 1000).code(), 0);  // pending puts count
  EXPECT_EQ(UsageOf("a").bytes, 1000u);
  EXPECT_EQ(UsageOf("a").objects, 1u);
  ASSERT_EQ(PutEnd("w", {A("k")}).codes(0), 0);
  PutComplete("w", "plain", 500);
  EXPECT_EQ(UsageOf("").bytes, 500u);
  EXPECT_EQ(Remove1(A("k")), ErrorCode::OK);
  EXPECT_EQ(UsageOf("a").bytes, 0u);
  EXPECT_EQ(UsageOf("a").objects, 0u);
  EXPECT_EQ(core_.RemoveAll(rpc::RemoveAll(), kT0).removed(), 1u);
  EXPECT_EQ(UsageOf("").bytes, 0u);
}

TEST_F(QuotaTest, PutPastQuotaEvictsOwnOldestObjects) {
  Mount("node1", "n1");
  PutComplete("w", B("old"), 1000, At(0));  // another tenant's, older than all of a's
  PutComplete("w", A("k1"), 1000, At(1));
  PutComplete("w", A("k2"), 1000, At(2));
  PutComplete("w", A("k3"), 1000, At(3));
  EXPECT_EQ(UsageOf("a").bytes, 3000u);
  auto r = Put1("w", A("k4"), 1000, At(4));
  ASSERT_EQ(r.code(), 0) << r.message();
  EXPECT_FALSE(r.already_exists());
  EXPECT_EQ(Code(Get1(A("k1"), At(4), true).code()), ErrorCode::OBJECT_NOT_FOUND);  // oldest
  EXPECT_EQ(Code(Get1(A("k2"), At(4), true).code()), ErrorCode::OK);
  EXPECT_EQ(Code(Get1(A("k3"), At(4), true).code()), ErrorCode::OK);
  EXPECT_EQ(Code(Get1(B("old"), At(4), true).code()), ErrorCode::OK);  // never another's
  EXPECT_EQ(UsageOf("a").bytes, 3000u);
  // A tenant without a quota is not limited by a's.
  PutComplete("w", B("more"), 5000, At(5));
}

TEST_F(QuotaTest, LeasedObjectsAreNotEvictedForQuota) {
  Mount("node1", "n1");
  PutComplete("w", A("k1"), 1500, At(1));
  PutComplete("w", A("k2"), 1500, At(2));
  ASSERT_EQ(Get1(A("k1"), At(3)).code(), 0);  // read leases
  ASSERT_EQ(Get1(A("k2"), At(3)).code(), 0);
  auto r = Put1("w", A("k3"), 1000, At(3));
  EXPECT_EQ(Code(r.code()), ErrorCode::TENANT_QUOTA_EXCEEDED);
  EXPECT_NE(r.message().find("tenant 'a'"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("3000"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("key=k3"), std::string::npos) << r.message();
  EXPECT_EQ(Code(Get1(A("k1"), At(3), true).code()), ErrorCode::OK);
  EXPECT_EQ(UsageOf("a").bytes, 3000u);
}

TEST_F(QuotaTest, ObjectLargerThanQuotaFailsAtOnce) {
  Mount("node1", "n1");
  PutComplete("w", A("k1"), 1000, At(1));
  auto r = Put1("w", A("huge"), 4000, At(2));
  EXPECT_EQ(Code(r.code()), ErrorCode::TENANT_QUOTA_EXCEEDED);
  EXPECT_EQ(Code(Get1(A("k1"), At(2), true).code()), ErrorCode::OK);  // nothing evicted for it
}

TEST_F(QuotaTest, MetricsShowTenants) {
  Mount("node1", "n1");
  PutComplete("w", A("k1"), 1000, At(1));
  PoolGauges pool;
  pool.stat = core_.Stat();
  pool.tenants = TenantGauges(core_);
  std::string text = MasterMetrics().Render(pool);
  EXPECT_NE(text.find("kvpool_tenant_used_bytes{tenant=\"a\"} 1000"), std::string::npos) << text;
  EXPECT_NE(text.find("kvpool_tenant_quota_bytes{tenant=\"a\"} 3000"), std::string::npos);
  EXPECT_NE(text.find("kvpool_tenant_objects{tenant=\"a\"} 1"), std::string::npos);
}

TEST(TenantQuotaFlagTest, Parses) {
  MasterOptions o;
  EXPECT_TRUE(AddTenantQuota("a=4096", o).ok());
  EXPECT_TRUE(AddTenantQuota("default=1MiB", o).ok());
  EXPECT_EQ(o.tenant_quotas.at("a"), 4096u);
  EXPECT_EQ(o.tenant_quotas.at(""), 1u << 20);
  EXPECT_EQ(AddTenantQuota("a", o).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(AddTenantQuota("=5", o).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(AddTenantQuota("a=lots", o).code(), ErrorCode::INVALID_PARAMS);
}

}  // namespace
}  // namespace kvpool::master
