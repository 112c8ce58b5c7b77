#include "master/object_table.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kvpool::master {
namespace {

TEST(ObjectTest, LayoutHoldsReplicasAndKeyInOneBlock) {
  std::vector<ReplicaRef> reps = {{1, 0, 7, 0}, {2, 4096, 9, 0}, {3, 64, 1, 0}};
  ObjectPtr o = Object::Create("page-0001", 4096, reps);
  EXPECT_EQ(o->key(), "page-0001");
  EXPECT_EQ(o->size, 4096u);
  ASSERT_EQ(o->replicas().size(), 3u);
  EXPECT_EQ(o->replicas()[1].segment_id, 2u);
  EXPECT_EQ(o->replicas()[1].offset, 4096u);
  EXPECT_EQ(o->replicas()[1].alloc_node, 9u);
  EXPECT_TRUE(o->pending());
  // Dropping replicas keeps the key intact.
  EXPECT_EQ(o->DropReplicasIf([](const ReplicaRef& r) { return r.segment_id == 2; }), 1u);
  ASSERT_EQ(o->replicas().size(), 2u);
  EXPECT_EQ(o->replicas()[1].segment_id, 3u);
  EXPECT_EQ(o->key(), "page-0001");
}

TEST(ObjectTest, MetadataBudget) {
  // Header (with its 8-byte checksum) + one replica; the rest of the 128-byte budget goes to
  // the index slot and control byte (9 bytes at a load of 25/64..7/8), the segment allocator's
  // node and malloc headers (MemoryPerObjectWithinBudget measures the table's share).
  EXPECT_LE(sizeof(Object) + sizeof(ReplicaRef), 64u);
}

TEST(ObjectTest, LastAccessKeepsItsOrderAtTickResolution) {
  ObjectPtr a = Object::Create("a", 1, {});
  ObjectPtr b = Object::Create("b", 1, {});
  const int64_t t0 = int64_t{123456789} << 24;  // a steady_clock reading days after boot
  a->set_last_access_ns(t0);
  b->set_last_access_ns(t0 + 20'000'000);  // 20 ms later: at least one 16.8 ms tick apart
  EXPECT_LT(a->last_access_ns(), b->last_access_ns());
  EXPECT_LE(a->last_access_ns(), t0);
  EXPECT_GT(a->last_access_ns(), t0 - (int64_t{1} << 24));
}

TEST(ObjectTest, StatesAndPins) {
  ObjectPtr o = Object::Create("k", 1, {});
  o->flags = kSoftPin;
  EXPECT_TRUE(o->soft_pinned());
  EXPECT_FALSE(o->hard_pinned());
  o->stamp_ns = 100;
  EXPECT_FALSE(o->leased(50));  // pending objects are never leased
  o->state = ObjectState::kComplete;
  EXPECT_TRUE(o->leased(50));
  EXPECT_FALSE(o->leased(100));
}

TEST(ObjectTableTest, InsertFindEraseAndCount) {
  ObjectTable t;
  for (int i = 0; i < 1000; ++i) {
    std::string key = "key-" + std::to_string(i);
    auto s = t.Lock(key);
    ASSERT_EQ(s->Find(key), nullptr);
    s->Insert(Object::Create(key, 10, {}));
  }
  EXPECT_EQ(t.size(), 1000u);
  {
    auto s = t.Lock("key-5");
    Object* o = s->Find("key-5");
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->key(), "key-5");
    s->Erase(o);
    EXPECT_EQ(s->Find("key-5"), nullptr);
  }
  EXPECT_EQ(t.size(), 999u);
  size_t seen = 0;
  std::vector<size_t> per_shard;
  for (size_t i = 0; i < ObjectTable::kShards; ++i) {
    auto s = t.LockIndex(i);
    seen += s->size();
    per_shard.push_back(s->size());
  }
  EXPECT_EQ(seen, 999u);
  // Keys spread over the shards (no shard holds more than 4x its share).
  for (size_t n : per_shard) EXPECT_LT(n, 4 * 1000 / ObjectTable::kShards);
}

// Churn through one shard's index: inserts and erases leave tombstones, rebuilds shed them, and
// every lookup still finds exactly what is there.
TEST(ObjectIndexTest, ChurnKeepsEveryKeyFindable) {
  ObjectIndex index;
  std::set<std::string> live;
  uint64_t rng = 42;
  auto next = [&] { return rng = rng * 6364136223846793005ull + 1442695040888963407ull; };
  for (int step = 0; step < 60000; ++step) {
    std::string key = "k" + std::to_string((next() >> 33) % 3000);
    Object* found = index.Find(key);
    ASSERT_EQ(found != nullptr, live.count(key) == 1) << key;
    if (found != nullptr) {
      EXPECT_EQ(found->key(), key);
      index.Erase(found);
      live.erase(key);
    } else {
      index.Insert(Object::Create(key, 1, {}).release());
      live.insert(key);
    }
    ASSERT_EQ(index.size(), live.size());
  }
  size_t seen = 0;
  index.ForEach([&](Object& o) {
    ++seen;
    EXPECT_EQ(live.count(std::string(o.key())), 1u);
  });
  EXPECT_EQ(seen, live.size());
  EXPECT_GT(index.rebuilds(), 1u);
  // Live objects fill at most 7/8 of the slots (the rest keeps probes short).
  EXPECT_LE(index.size() * 8, index.capacity() * 7);
}

TEST(ObjectIndexTest, ObjectsKeepTheirSlotsUntilARebuild) {
  ObjectIndex index;
  for (int i = 0; i < 100; ++i)
    index.Insert(Object::Create("a" + std::to_string(i), 1, {}).release());
  const uint64_t rebuilds = index.rebuilds();
  auto slots_of = [&] {
    std::map<std::string, size_t> where;
    for (size_t i = 0; i < index.capacity(); ++i) {
      index.ForEachInSlots(i, i + 1, [&](Object& o) { where[std::string(o.key())] = i; });
    }
    return where;
  };
  auto before = slots_of();
  // Erasing (and inserting below the growth threshold) moves nobody.
  for (int i = 0; i < 50; i += 2) index.Erase(index.Find("a" + std::to_string(i)));
  index.Insert(Object::Create("b", 1, {}).release());
  ASSERT_EQ(index.rebuilds(), rebuilds);
  auto after = slots_of();
  for (const auto& [key, slot] : after) {
    if (key != "b") {
      EXPECT_EQ(before.at(key), slot) << key;
    }
  }
  EXPECT_EQ(after.size(), 100u - 25u + 1u);
  EXPECT_EQ(index.EraseIf([](Object& o) { return o.key()[0] == 'a'; }), 75u);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_NE(index.Find("b"), nullptr);
  EXPECT_EQ(index.Find("a1"), nullptr);
}

TEST(ObjectTableTest, PendingIndexFollowsState) {
  ObjectTable t;
  auto s = t.Lock("a");
  Object* a = s->Insert(Object::Create("a", 1, {}));
  EXPECT_EQ(s->pending().count(a), 1u);
  s->MarkComplete(a);
  EXPECT_EQ(s->pending().count(a), 0u);
  EXPECT_FALSE(a->pending());
  EXPECT_EQ(a->lease_until_ns(), 0);
}

TEST(ObjectTableTest, EraseIfKeepsPendingIndexConsistent) {
  ObjectTable t;
  for (size_t i = 0; i < ObjectTable::kShards; ++i) {
    auto s = t.LockIndex(i);
    EXPECT_EQ(s->EraseIf([](Object&) { return true; }), 0u);
  }
  std::vector<std::string> keys;
  keys.reserve(200);
  for (int i = 0; i < 200; ++i) keys.push_back("p" + std::to_string(i));
  for (const auto& k : keys) t.Lock(k)->Insert(Object::Create(k, 1, {}));
  size_t erased = 0, pending_left = 0;
  for (size_t i = 0; i < ObjectTable::kShards; ++i) {
    auto s = t.LockIndex(i);
    erased += s->EraseIf([](Object& o) { return o.key().back() % 2 == 0; });
    pending_left += s->pending().size();
    for (Object* p : s->pending()) EXPECT_EQ(s->Find(p->key()), p);
  }
  EXPECT_EQ(erased + pending_left, 200u);
  EXPECT_EQ(t.size(), pending_left);
}

// The budget: <= 128 bytes of metadata per object plus the key's bytes (measured with 80-byte
// keys, the size SGLang uses, and one replica).
TEST(ObjectTableTest, MemoryPerObjectWithinBudget) {
  // gcc announces AddressSanitizer with a macro, clang through __has_feature.
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan's allocator does not report through mallinfo2";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "ASan's allocator does not report through mallinfo2";
#endif
#endif
  constexpr size_t kN = 200000, kKeyBytes = 80;
  std::vector<std::string> keys;
  keys.reserve(kN);
  for (size_t i = 0; i < kN; ++i) {
    std::string k = std::to_string(i);
    keys.push_back(std::string(kKeyBytes - k.size(), 'k') + k);
  }
  auto heap = [] {
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  size_t before = heap();
  ObjectTable t;
  ReplicaRef rep{1, 0, 0, 0};
  for (const auto& k : keys) {
    ObjectPtr o = Object::Create(k, 4096, {&rep, 1});
    o->state = ObjectState::kComplete;
    t.Lock(k)->Insert(std::move(o));
  }
  double per_object = static_cast<double>(heap() - before) / kN;
  EXPECT_LE(per_object, 128.0 + kKeyBytes) << per_object;
  RecordProperty("bytes_per_object", std::to_string(per_object));
  std::printf("metadata per object with an 80-byte key: %.1f bytes\n", per_object);
}

}  // namespace
}  // namespace kvpool::master
