#include "master/kv_events.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>

namespace kvpool::master {
namespace {

TEST(KeyBlockHash, SglangPageKeyGivesTheHashBytes) {
  const std::string hex = "00ff10a0" + std::string(56, 'b');
  KvBlockHash h = KeyBlockHash(hex + "_3_k");
  ASSERT_TRUE(std::holds_alternative<std::string>(h));
  const std::string& b = std::get<std::string>(h);
  ASSERT_EQ(b.size(), 32u);
  EXPECT_EQ(static_cast<uint8_t>(b[0]), 0x00);
  EXPECT_EQ(static_cast<uint8_t>(b[1]), 0xff);
  EXPECT_EQ(static_cast<uint8_t>(b[3]), 0xa0);
  // The K and V objects of one page (and a tenant prefix) map to the same block.
  EXPECT_EQ(KeyBlockHash("t1/" + hex + "_3_v"), h);
}

TEST(KeyBlockHash, ConnectorKeyTakesTheLongestHexRun) {
  KvBlockHash h = KeyBlockHash("model@tp0@deadbeef@0123456789abcdef01");
  ASSERT_TRUE(std::holds_alternative<std::string>(h));
  EXPECT_EQ(std::get<std::string>(h).size(), 9u);
  // An odd run drops its first digit.
  EXPECT_EQ(std::get<std::string>(KeyBlockHash("x1234567890abcdef0")).size(), 8u);
}

TEST(KeyBlockHash, KeyWithoutHashGivesA63BitInt) {
  KvBlockHash h = KeyBlockHash("user/session-42/page-7");
  ASSERT_TRUE(std::holds_alternative<uint64_t>(h));
  EXPECT_LT(std::get<uint64_t>(h), uint64_t{1} << 63);
  EXPECT_EQ(KeyBlockHash("user/session-42/page-7"), h);
  EXPECT_NE(KeyBlockHash("user/session-42/page-8"), h);
  // 15 hex digits are not a hash.
  EXPECT_TRUE(std::holds_alternative<uint64_t>(KeyBlockHash("abcdef012345678")));
}

TEST(KvEventQueue, DropsAndCountsWhenFull) {
  KvEventQueue q(2);
  for (int i = 0; i < 5; ++i) q.Add(KvEventKind::kStored, KvMedium::kDram, KvRemoval::kNone, "k");
  EXPECT_EQ(q.accepted(), 2u);
  EXPECT_EQ(q.dropped(), 3u);
  std::vector<KvEvent> out;
  EXPECT_EQ(q.Drain(&out, 10), 2u);
  EXPECT_EQ(q.Drain(&out, 10), 0u);
  q.Add(KvEventKind::kRemoved, KvMedium::kDisk, KvRemoval::kRemoved, "k");
  EXPECT_EQ(q.accepted(), 3u);
}

TEST(EncodeKvEventBatch, VllmArrayLayout) {
  std::vector<KvEvent> events = {
      {KvEventKind::kCleared, KvMedium::kDram, KvRemoval::kNone, ""},
      {KvEventKind::kStored, KvMedium::kDram, KvRemoval::kNone, "a"},
      {KvEventKind::kStored, KvMedium::kDram, KvRemoval::kNone, "b"},
      {KvEventKind::kStored, KvMedium::kDisk, KvRemoval::kNone, "b"},
      {KvEventKind::kRemoved, KvMedium::kDram, KvRemoval::kNone, std::string(16, 'a')},
  };
  std::string bytes = EncodeKvEventBatch(12.5, events, 16);
  msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size());
  const msgpack::object& batch = oh.get();
  ASSERT_EQ(batch.type, msgpack::type::ARRAY);
  ASSERT_EQ(batch.via.array.size, 2u);
  EXPECT_EQ(batch.via.array.ptr[0].as<double>(), 12.5);
  const msgpack::object& evs = batch.via.array.ptr[1];
  ASSERT_EQ(evs.via.array.size, 4u);  // cleared, stored x2 (DRAM), stored (DISK), removed
  EXPECT_EQ(evs.via.array.ptr[0].via.array.ptr[0].as<std::string>(), "AllBlocksCleared");
  const msgpack::object* stored = evs.via.array.ptr[1].via.array.ptr;
  ASSERT_EQ(evs.via.array.ptr[1].via.array.size, 8u);
  EXPECT_EQ(stored[0].as<std::string>(), "BlockStored");
  EXPECT_EQ(stored[1].via.array.size, 2u);
  EXPECT_EQ(stored[2].type, msgpack::type::NIL);
  EXPECT_EQ(stored[3].via.array.size, 0u);
  EXPECT_EQ(stored[4].as<uint32_t>(), 16u);
  EXPECT_EQ(stored[6].as<std::string>(), "DRAM");
  EXPECT_EQ(evs.via.array.ptr[2].via.array.ptr[6].as<std::string>(), "DISK");
  const msgpack::object* removed = evs.via.array.ptr[3].via.array.ptr;
  ASSERT_EQ(evs.via.array.ptr[3].via.array.size, 3u);
  EXPECT_EQ(removed[0].as<std::string>(), "BlockRemoved");
  EXPECT_EQ(removed[1].via.array.ptr[0].type, msgpack::type::BIN);
  EXPECT_EQ(removed[2].as<std::string>(), "DRAM");
}

TEST(KvEventTopicSuffix, EvictionsAndDropsSayWhy) {
  EXPECT_EQ(KvEventTopicSuffix(KvRemoval::kRemoved), "");
  EXPECT_EQ(KvEventTopicSuffix(KvRemoval::kEvictedWatermark), ".evicted.watermark");
  EXPECT_EQ(KvEventTopicSuffix(KvRemoval::kDropped), ".dropped");
}

}  // namespace
}  // namespace kvpool::master
