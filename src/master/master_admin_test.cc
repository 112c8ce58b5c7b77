// MasterCore's admin views: paged listing, inspection, clients, pending count.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "master/master_test_util.h"

namespace kvpool::master::testing {
namespace {

class AdminViewTest : public CoreTest {};

// Pages through everything with `limit`, returning every key seen (failing on a repeat).
std::vector<std::string> ListAll(MasterCore& core, std::string_view prefix, size_t limit,
                                 size_t* pages = nullptr) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  std::string cursor;
  for (int page = 0; page < 10000; ++page) {
    auto l = core.ListObjects(prefix, limit, cursor);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    if (!l.ok()) break;
    EXPECT_LE(l->objects.size(), limit);
    for (const auto& e : l->objects) {
      EXPECT_TRUE(seen.insert(e.key).second) << "repeated key " << e.key;
      keys.push_back(e.key);
    }
    if (pages != nullptr) *pages = page + 1;
    if (l->next_cursor.empty()) break;
    cursor = l->next_cursor;
  }
  return keys;
}

TEST_F(AdminViewTest, ListObjectsPagesWithoutRepeatsOrGaps) {
  Mount("node", "node:1");
  std::set<std::string> want;
  for (int i = 0; i < 300; ++i) {
    std::string key = (i % 3 == 0 ? "a/" : "b/") + std::to_string(i);
    PutComplete("c", key, 64);
    if (i % 3 == 0) want.insert(key);
  }
  Put1("c", "a/pending", 64);  // pending objects are listed too
  want.insert("a/pending");
  for (size_t limit : {1, 7, 100, 10000}) {
    size_t pages = 0;
    auto keys = ListAll(core_, "a/", limit, &pages);
    EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()), want) << "limit " << limit;
    if (limit == 1) {
      EXPECT_GE(pages, want.size());
    }
  }
  EXPECT_EQ(ListAll(core_, "", 50).size(), 301u);
  EXPECT_TRUE(ListAll(core_, "zzz", 10).empty());

  auto page = core_.ListObjects("a/pending", 10, "");
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_TRUE(page->objects[0].pending);
  EXPECT_EQ(page->objects[0].size, 64u);
}

TEST_F(AdminViewTest, ListObjectsKeepsGoingWhileKeysChange) {
  Mount("node", "node:1");
  for (int i = 0; i < 200; ++i) PutComplete("c", "k" + std::to_string(i), 64);
  std::string cursor;
  std::set<std::string> seen;
  for (int page = 0; page < 1000; ++page) {
    auto l = core_.ListObjects("", 10, cursor);
    ASSERT_TRUE(l.ok());
    for (const auto& e : l->objects) EXPECT_TRUE(seen.insert(e.key).second) << e.key;
    // Churn between pages: new keys and removals must not break paging.
    PutComplete("c", "new" + std::to_string(page), 64);
    if (l->next_cursor.empty()) break;
    cursor = l->next_cursor;
  }
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(seen.count("k" + std::to_string(i))) << i;
}

// Paging while another thread keeps inserting (so shards rehash mid-scan): every key present
// throughout is listed exactly once, in every full pass.
TEST_F(AdminViewTest, ListObjectsUnderConcurrentInsertsAndRehashes) {
  Mount("node", "node:1", 1ull << 30);
  constexpr int kOld = 70000;  // over 2048 slots per shard: scans take several pieces
  for (int b = 0; b < kOld; b += 1000) {
    std::vector<std::string> keys;
    for (int i = b; i < b + 1000; ++i) keys.push_back("old/" + std::to_string(i));
    PutStart("c", keys, 64);
    PutEnd("c", keys);
  }
  std::atomic<bool> writing{true};
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int b = 0; b < 150000; b += 100) {
      rpc::PutStart p;
      p.set_client_id("w");
      for (int i = b; i < b + 100; ++i) {
        auto* item = p.add_items();
        item->set_key("new/" + std::to_string(i));
        item->set_size(64);
      }
      (void)core_.PutStart(p, kT0);
      written += 100;
    }
    writing = false;
  });
  int passes = 0;
  for (; passes < 50 && (writing || passes == 0); ++passes) {
    std::multiset<std::string> seen;
    std::string cursor;
    for (int page = 0; page < 100000; ++page) {
      auto l = core_.ListObjects("old/", 97, cursor);
      ASSERT_TRUE(l.ok());
      for (const auto& e : l->objects) seen.insert(e.key);
      if (l->next_cursor.empty()) break;
      cursor = l->next_cursor;
    }
    ASSERT_EQ(seen.size(), static_cast<size_t>(kOld)) << "pass " << passes;
    ASSERT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), static_cast<size_t>(kOld));
  }
  writer.join();
  EXPECT_GT(passes, 1) << "the writer finished before a second pass: no overlap tested";
}

TEST_F(AdminViewTest, ListObjectsRejectsBadLimitAndCursor) {
  EXPECT_EQ(core_.ListObjects("", 0, "").code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(core_.ListObjects("", MasterCore::kMaxListLimit + 1, "").code(),
            ErrorCode::INVALID_PARAMS);
  for (const char* bad : {"x", "64/", "1/abc", "1/zz", "/00", "-1/00", "1"}) {
    EXPECT_EQ(core_.ListObjects("", 10, bad).code(), ErrorCode::INVALID_PARAMS) << bad;
  }
  EXPECT_TRUE(core_.ListObjects("", 10, "63/").ok());
  // A cursor's key lies in the shard it names (issue 33: another shard is a made-up cursor).
  const size_t shard = ObjectTable::ShardOf("\xff");
  EXPECT_TRUE(core_.ListObjects("", 10, std::to_string(shard) + "/ff").ok());
  EXPECT_EQ(core_.ListObjects("", 10, std::to_string((shard + 1) % 64) + "/ff").code(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(core_.ListObjects("a", 10, std::to_string(shard) + "/ff").code(),
            ErrorCode::INVALID_PARAMS);  // not under the prefix
}

TEST_F(AdminViewTest, InspectObjectShowsStateReplicasAndLease) {
  Mount("node", "node:1");
  Put1("writer", "p", 100, kT0);
  auto pending = core_.InspectObject("p", At(2));
  ASSERT_TRUE(pending.ok());
  EXPECT_TRUE(pending->pending);
  EXPECT_EQ(pending->pending_age_ms, 2000);
  EXPECT_EQ(pending->writer, "writer");
  ASSERT_EQ(pending->replicas.size(), 1u);
  EXPECT_EQ(pending->replicas[0].segment_name, "node:1");

  PutComplete("c", "k", 100, kT0);
  Get1("k", At(1));  // lease until 1 + 10 s
  auto info = core_.InspectObject("k", At(4));
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->pending);
  EXPECT_EQ(info->size, 100u);
  EXPECT_EQ(info->lease_remaining_ms, 7000);
  EXPECT_NEAR(info->idle_ms, 3000, 17);  // the LRU clock keeps 16.8 ms ticks
  EXPECT_EQ(info->writer, "");
  EXPECT_EQ(core_.InspectObject("k", At(20))->lease_remaining_ms, 0);
  EXPECT_EQ(core_.InspectObject("missing", kT0).code(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(core_.InspectObject("", kT0).code(), ErrorCode::INVALID_KEY);
}

TEST_F(AdminViewTest, ListClientsAndPendingObjects) {
  Mount("node-b", "node:b", kSeg, kT0);
  Ping("client-a", At(1));
  Put1("client-a", "p1", 64, At(1));
  Put1("client-a", "p2", 64, At(1));
  auto clients = core_.ListClients(At(3));
  ASSERT_EQ(clients.size(), 2u);
  EXPECT_EQ(clients[0].client_id, "client-a");
  EXPECT_EQ(clients[0].last_seen_ms_ago, 2000);
  EXPECT_TRUE(clients[0].segments.empty());
  EXPECT_EQ(clients[1].client_id, "node-b");
  EXPECT_EQ(clients[1].segments, std::vector<std::string>{"node:b"});
  EXPECT_TRUE(clients[1].known);
  EXPECT_EQ(core_.PendingObjects(), 2u);
  PutEnd("client-a", {"p1"});
  EXPECT_EQ(core_.PendingObjects(), 1u);
}

}  // namespace
}  // namespace kvpool::master::testing
