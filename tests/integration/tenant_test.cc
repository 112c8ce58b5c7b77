// Tenants across real processes (docs/security.md, "Tenants"): a pool with a pool secret, tenant
// clients that hold only their tenant keys (made by `kvpool tenant-key`), and the default
// tenant. No call of one tenant reads, probes, lists, removes or overwrites another's objects;
// a tenant key proves one tenant only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <span>
#include <thread>

#include "secured_pool_test.h"

namespace kvpool::testing {
namespace {

class TenantTest : public SecuredPoolTest {
 protected:
  // A client of `tenant` that holds only the tenant key in `key_file`.
  Result<std::unique_ptr<Client>> TenantClient(const std::string& tenant,
                                               const std::string& key_file) {
    ClientOptions o;
    o.master_server_address = pool_->master_address();
    o.tenant_id = tenant;
    o.tenant_key_file = key_file;
    return Client::Setup(o);
  }
  std::unique_ptr<Client> Tenant(const std::string& tenant) {
    auto c = TenantClient(tenant, TenantKeyFile(tenant));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Status Put(Client& c, const std::string& key, uint32_t version, size_t n = kPage) {
    auto bytes = ObjectBytes(key, version, n);
    return c.BatchPut({key}, {std::span<const uint8_t>(bytes)})[0];
  }
  // The object's bytes equal version `version` of `key`.
  static void ExpectBytes(Client& c, const std::string& key, uint32_t version) {
    auto got = c.BatchGet({key})[0];
    ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
    EXPECT_EQ(*got, ObjectBytes(key, version, kPage)) << key;
  }
};

TEST_F(TenantTest, NoCallCrossesTenants) {
  StartPool();
  auto a = Tenant("a");
  auto b = Tenant("b");
  auto def = pool_->NewClient();  // the pool secret, default tenant
  ASSERT_TRUE(a && b && def);
  ASSERT_TRUE(Put(*a, "page-0", 1).ok());
  ASSERT_TRUE(Put(*a, "page-1", 1).ok());

  for (Client* other : {b.get(), def.get()}) {
    auto got = other->BatchGet({"page-0"})[0];
    EXPECT_EQ(got.status().code(), ErrorCode::OBJECT_NOT_FOUND);
    EXPECT_EQ(got.status().message().find('\0'), std::string::npos);  // the user's key only
    EXPECT_EQ(other->GetSize("page-0").code(), ErrorCode::OBJECT_NOT_FOUND);
    auto exists = other->IsExist("page-0");
    ASSERT_TRUE(exists.ok());
    EXPECT_FALSE(*exists);
    auto batch = other->BatchIsExist({"page-0", "page-1"});
    EXPECT_FALSE(*batch[0]);
    EXPECT_FALSE(*batch[1]);
    EXPECT_EQ(*other->ExistsPrefix({"page-0", "page-1"}), 0u);
    EXPECT_EQ(other->Remove("page-0", /*force=*/true).code(), ErrorCode::OBJECT_NOT_FOUND);
    EXPECT_EQ(other->BatchRemove({"page-1"}, true)[0].code(), ErrorCode::OBJECT_NOT_FOUND);
    auto removed = other->RemoveAll(/*force=*/true);
    ASSERT_TRUE(removed.ok());
    EXPECT_EQ(*removed, 0u);
  }
  EXPECT_EQ(*a->ExistsPrefix({"page-0", "page-1"}), 2u);

  // The same user key in B is B's own object with its own bytes: A's stays as it was. An
  // upsert by B (before any read leases it) replaces B's object only.
  ASSERT_TRUE(Put(*b, "page-0", 2).ok());
  ASSERT_TRUE(Put(*def, "page-0", 3).ok());
  ExpectBytes(*a, "page-0", 1);
  auto v4 = ObjectBytes("page-0", 4, kPage);
  ASSERT_TRUE(b->RegisterBuffer(v4.data(), v4.size()).ok());
  Status up = b->BatchUpsertFrom({"page-0"}, {v4.data()}, {v4.size()})[0];
  ASSERT_TRUE(up.ok()) << up.ToString();
  ExpectBytes(*a, "page-0", 1);
  ExpectBytes(*b, "page-0", 4);
  ExpectBytes(*def, "page-0", 3);

  // Remove-all of one tenant leaves the others' objects.
  EXPECT_EQ(*b->RemoveAll(true), 1u);
  EXPECT_EQ(*def->RemoveAll(true), 1u);
  ExpectBytes(*a, "page-0", 1);
  EXPECT_EQ(*a->RemoveAll(true), 2u);
}

TEST_F(TenantTest, TenantKeyProvesOneTenantOnly) {
  StartPool();
  std::string key_a = TenantKeyFile("a");
  ASSERT_TRUE(TenantClient("a", key_a).ok());
  EXPECT_EQ(TenantClient("b", key_a).code(), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(TenantClient("", key_a).code(), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(TenantClient("default", key_a).code(), ErrorCode::ILLEGAL_CLIENT);
  // A pool secret that is not this pool's is refused too.
  ClientOptions wrong;
  wrong.master_server_address = pool_->master_address();
  wrong.auth_secret = "not-the-secret";
  EXPECT_EQ(Client::Setup(wrong).code(), ErrorCode::ILLEGAL_CLIENT);
}

TEST_F(TenantTest, TenantKeyClientContributesNoMemory) {
  StartPool();
  ClientOptions o;
  o.master_server_address = pool_->master_address();
  o.tenant_id = "a";
  o.tenant_key_file = TenantKeyFile("a");
  o.global_segment_size = 16 << 20;
  EXPECT_EQ(Client::Setup(o).code(), ErrorCode::INVALID_PARAMS);
}

TEST_F(TenantTest, CliTakesTenantFlags) {
  StartPool();
  std::string key_a = TenantKeyFile("a");
  std::string file = dir_ + "/page";
  std::ofstream(file) << "hello tenant a\n";
  std::vector<std::string> as_a = {"--master", pool_->master_address(), "--tenant_id",
                                   "a",        "--tenant_key_file",     key_a};
  auto args = [&](std::vector<std::string> head) {
    head.insert(head.end(), as_a.begin(), as_a.end());
    return head;
  };
  RunResult put = RunCommand(kBinary, args({"put", "k", file}));
  ASSERT_EQ(put.exit_code, 0) << put.output;
  EXPECT_EQ(RunCommand(kBinary, args({"exists", "k"})).exit_code, 0);
  // The pool secret's default tenant does not see it.
  RunResult other = RunCommand(kBinary, {"exists", "k", "--master", pool_->master_address(),
                                         "--auth_secret_file", secret_file_});
  EXPECT_NE(other.exit_code, 0) << other.output;
}

TEST_F(TenantTest, QuotaEvictsOwnObjectsThenRefuses) {
  StartPool({"--tenant_quota", "a=" + std::to_string(4 * kPage)});
  auto a = Tenant("a");
  auto b = Tenant("b");
  ASSERT_TRUE(a && b);
  // Eviction's LRU clock ticks every 16.8 ms (order within a tick is arbitrary): the pauses
  // make the put order the LRU order.
  auto tick = [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); };
  ASSERT_TRUE(Put(*b, "b-old", 1).ok());  // older than all of a's: still never a's to evict
  for (int i = 0; i < 4; ++i) {
    tick();
    ASSERT_TRUE(Put(*a, "p" + std::to_string(i), 1).ok());
  }
  tick();
  // A fifth page takes a past its quota: a's least recently used page goes.
  Status st = Put(*a, "p4", 1);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(a->BatchGet({"p0"})[0].status().code(), ErrorCode::OBJECT_NOT_FOUND);
  for (int i = 1; i < 5; ++i) ExpectBytes(*a, "p" + std::to_string(i), 1);
  ExpectBytes(*b, "b-old", 1);
  // The reads above held a's pages only while they moved: a sixth page evicts one of a's again
  // (they were all read within one LRU tick: any one of them).
  st = Put(*a, "p5", 1);
  ASSERT_TRUE(st.ok()) << st.ToString();
  int present = 0;
  for (int i = 1; i < 6; ++i) present += a->BatchGet({"p" + std::to_string(i)})[0].ok() ? 1 : 0;
  EXPECT_EQ(present, 4);
  ExpectBytes(*b, "b-old", 1);
  // With a's quota full of hard-pinned pages nothing of a's may be evicted, so the put fails and
  // says why; b has no quota and is not limited by a's.
  ASSERT_EQ(*a->RemoveAll(true), 4u);
  ReplicateConfig pinned;
  pinned.with_hard_pin = true;
  for (int i = 0; i < 4; ++i) {
    const std::string k = "pinned" + std::to_string(i);
    auto bytes = ObjectBytes(k, 1, kPage);
    ASSERT_TRUE(a->BatchPut({k}, {std::span<const uint8_t>(bytes)}, pinned)[0].ok());
  }
  st = Put(*a, "p6", 1);
  EXPECT_EQ(st.code(), ErrorCode::TENANT_QUOTA_EXCEEDED) << st.ToString();
  EXPECT_NE(st.message().find("tenant 'a'"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find(std::to_string(4 * kPage)), std::string::npos) << st.ToString();
  // Larger than the whole quota: refused without evicting anything.
  EXPECT_EQ(Put(*a, "huge", 1, 8 * kPage).code(), ErrorCode::TENANT_QUOTA_EXCEEDED);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Put(*b, "b" + std::to_string(i), 1).ok());
}

}  // namespace
}  // namespace kvpool::testing
