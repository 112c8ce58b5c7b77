// MasterCore::ScanKeys (remove_by_regex, list_keys): per tenant, regex searched in the user
// key, paged with bounded work, removal skipping leased (unless forced) and pending objects.
#include <gtest/gtest.h>

#include <set>

#include "common/tenant_key.h"
#include "master/master_test_util.h"

namespace kvpool::master::testing {
namespace {

class ScanKeysTest : public CoreTest {
 protected:
  // Follows every page; returns the keys of all pages (failing on a repeat) and the totals.
  std::vector<std::string> ScanAll(std::string_view tenant, const std::string& pattern,
                                   uint32_t limit, bool remove = false, bool force = false,
                                   Clock::time_point now = kT0, uint64_t* removed = nullptr,
                                   uint64_t* skipped = nullptr, size_t* pages = nullptr) {
    std::vector<std::string> keys;
    std::set<std::string> seen;
    std::string cursor;
    uint64_t rm = 0, sk = 0;
    size_t n = 0;
    for (; n < 100000; ++n) {
      rpc::ScanKeys req;
      req.set_pattern(pattern);
      req.set_cursor(cursor);
      req.set_limit(limit);
      req.set_remove(remove);
      req.set_force(force);
      auto r = core_.ScanKeys(req, now, tenant);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      EXPECT_LE(static_cast<size_t>(r->keys_size()), limit == 0 ? 1000u : limit);
      for (const auto& k : r->keys()) {
        EXPECT_TRUE(seen.insert(k).second) << "repeated key " << k;
        keys.push_back(k);
      }
      rm += r->removed();
      sk += r->skipped();
      if (r->next_cursor().empty()) break;
      cursor = r->next_cursor();
    }
    if (removed != nullptr) *removed = rm;
    if (skipped != nullptr) *skipped = sk;
    if (pages != nullptr) *pages = n + 1;
    return keys;
  }
  static std::set<std::string> Set(const std::vector<std::string>& v) {
    return {v.begin(), v.end()};
  }
};

TEST_F(ScanKeysTest, ListsOnlyTheCallersTenantWithASearchRegex) {
  Mount("node", "node:1");
  std::set<std::string> want;
  for (int i = 0; i < 120; ++i) {
    std::string key = (i % 2 == 0 ? "layer/" : "other/") + std::to_string(i);
    PutComplete("c", key, 64);
    if (i % 2 == 0) want.insert(key);
  }
  PutComplete("c", MakeTenantKey("t1", "layer/secret"), 64);
  ASSERT_EQ(Put1("c", "layer/pending", 64).code(), 0);  // pending: not listed

  size_t pages = 0;
  // "ayer/" matches inside the key (a search, not a full match).
  auto keys = ScanAll("", "ayer/", 7, false, false, kT0, nullptr, nullptr, &pages);
  EXPECT_EQ(Set(keys), want);
  EXPECT_GE(pages, 120u / 7);  // bounded pages: the limit is the keys examined per request
  EXPECT_EQ(ScanAll("", "", 1000).size(), 120u);  // the other tenant's key is not listed

  auto t1 = ScanAll("t1", "", 10);
  EXPECT_EQ(Set(t1), std::set<std::string>{"layer/secret"});  // user keys, without the prefix
  EXPECT_TRUE(ScanAll("t2", "", 10).empty());
  EXPECT_EQ(ScanAll("", "^other/1[0-9]$", 50).size(), 5u);  // 11, 13, 15, 17, 19
}

TEST_F(ScanKeysTest, RemoveSkipsLeasedUnlessForcedAndPendingAndOtherTenants) {
  Mount("node", "node:1");
  for (int i = 0; i < 40; ++i) PutComplete("c", "drop/" + std::to_string(i), 64);
  PutComplete("c", "keep/0", 64);
  PutComplete("c", "drop/leased", 64);
  PutComplete("c", MakeTenantKey("t1", "drop/x"), 64);
  ASSERT_EQ(Put1("c", "drop/pending", 64).code(), 0);
  Get1("drop/leased", At(1));  // leased until At(11)

  uint64_t removed = 0, skipped = 0;
  auto gone = ScanAll("", "^drop/", 9, /*remove=*/true, false, At(2), &removed, &skipped);
  EXPECT_EQ(removed, 40u);
  EXPECT_EQ(gone.size(), 40u);
  EXPECT_EQ(skipped, 2u);  // the leased and the pending object
  EXPECT_EQ(Exists1("keep/0"), 1);
  EXPECT_EQ(Exists1("drop/leased"), 1);
  EXPECT_EQ(Exists1(MakeTenantKey("t1", "drop/x")), 1);

  ScanAll("", "^drop/", 9, /*remove=*/true, /*force=*/true, At(2), &removed, &skipped);
  EXPECT_EQ(removed, 1u);  // force bypasses the lease, never a pending put
  EXPECT_EQ(skipped, 1u);
  EXPECT_EQ(Exists1("drop/leased"), 0);
  EXPECT_EQ(Set(ScanAll("", "", 100)), (std::set<std::string>{"keep/0"}));
}

TEST_F(ScanKeysTest, BadPatternLimitAndCursorAreInvalidParams) {
  Mount("node", "node:1");
  PutComplete("c", "k", 64);
  rpc::ScanKeys req;
  req.set_pattern("([unclosed");
  auto r = core_.ScanKeys(req, kT0, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(r.status().message().find("does not compile"), std::string::npos);

  req.set_pattern("");
  req.set_limit(10001);
  EXPECT_EQ(core_.ScanKeys(req, kT0, "").status().code(), ErrorCode::INVALID_PARAMS);
  req.set_limit(10);
  req.set_cursor("not a cursor");
  EXPECT_EQ(core_.ScanKeys(req, kT0, "").status().code(), ErrorCode::INVALID_PARAMS);
  req.set_pattern(std::string(5000, 'a'));
  req.set_cursor("");
  EXPECT_EQ(core_.ScanKeys(req, kT0, "").status().code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Exists1("k"), 1);
}

}  // namespace
}  // namespace kvpool::master::testing
