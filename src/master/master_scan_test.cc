// MasterCore::ScanKeys (behind remove_by_regex and list_keys): per tenant, by literal prefix,
// complete objects only, paged with bounded work and without repeats.
#include <gtest/gtest.h>

#include <set>

#include "common/tenant_key.h"
#include "master/master_test_util.h"

namespace kvpool::master::testing {
namespace {

class ScanKeysTest : public CoreTest {
 protected:
  // Follows every page; returns the keys of all pages (failing on a repeat).
  std::vector<std::string> ScanAll(std::string_view tenant, const std::string& prefix,
                                   uint32_t limit, size_t* pages = nullptr) {
    std::vector<std::string> keys;
    std::set<std::string> seen;
    std::string cursor;
    size_t n = 0;
    for (; n < 100000; ++n) {
      rpc::ScanKeys req;
      req.set_prefix(prefix);
      req.set_cursor(cursor);
      req.set_limit(limit);
      auto r = core_.ScanKeys(req, tenant);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      EXPECT_LE(static_cast<size_t>(r->keys_size()), limit == 0 ? 1000u : limit);
      for (const auto& k : r->keys()) {
        EXPECT_TRUE(seen.insert(k).second) << "repeated key " << k;
        keys.push_back(k);
      }
      if (r->next_cursor().empty()) break;
      cursor = r->next_cursor();
    }
    if (pages != nullptr) *pages = n + 1;
    return keys;
  }
  static std::set<std::string> Set(const std::vector<std::string>& v) {
    return {v.begin(), v.end()};
  }
};

TEST_F(ScanKeysTest, ListsTheCallersTenantByPrefixInBoundedPages) {
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
  EXPECT_EQ(Set(ScanAll("", "layer/", 7, &pages)), want);
  EXPECT_GE(pages, 60u / 7);                      // the limit bounds the keys examined per request
  EXPECT_EQ(ScanAll("", "", 1000).size(), 120u);  // the other tenant's key is not listed
  EXPECT_EQ(Set(ScanAll("t1", "", 10)), std::set<std::string>{"layer/secret"});  // user keys
  EXPECT_EQ(Set(ScanAll("t1", "layer/", 10)), std::set<std::string>{"layer/secret"});
  EXPECT_TRUE(ScanAll("t2", "", 10).empty());
  EXPECT_TRUE(ScanAll("", "zzz", 10).empty());
}

TEST_F(ScanKeysTest, KeysRemovedBetweenPagesDoNotBreakTheScan) {
  Mount("node", "node:1");
  for (int i = 0; i < 100; ++i) PutComplete("c", "k" + std::to_string(i), 64);
  std::string cursor;
  std::set<std::string> seen;
  for (int page = 0; page < 1000; ++page) {
    rpc::ScanKeys req;
    req.set_cursor(cursor);
    req.set_limit(9);
    auto r = core_.ScanKeys(req, "");
    ASSERT_TRUE(r.ok());
    for (const auto& k : r->keys()) {
      EXPECT_TRUE(seen.insert(k).second) << k;
      EXPECT_EQ(Remove1(k), ErrorCode::OK);  // remove_by_regex removes each page as it goes
    }
    if (r->next_cursor().empty()) break;
    cursor = r->next_cursor();
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(core_.Stat().object_count(), 0u);
}

TEST_F(ScanKeysTest, BadLimitCursorAndPrefixAreInvalidParams) {
  Mount("node", "node:1");
  PutComplete("c", "k", 64);
  rpc::ScanKeys req;
  req.set_limit(10001);
  EXPECT_EQ(core_.ScanKeys(req, "").status().code(), ErrorCode::INVALID_PARAMS);
  req.set_limit(10);
  req.set_cursor("not a cursor");
  EXPECT_EQ(core_.ScanKeys(req, "").status().code(), ErrorCode::INVALID_PARAMS);
  req.set_cursor("");
  req.set_prefix(std::string(4097, 'a'));
  EXPECT_EQ(core_.ScanKeys(req, "").status().code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Exists1("k"), 1);
}

}  // namespace
}  // namespace kvpool::master::testing
