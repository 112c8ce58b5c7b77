#include "client/shared/batch_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvpool::client {
namespace {

TEST(ObjectBatchTest, KeepsEachObjectsBuffersInOrder) {
  char a[8], b[16], c[4];
  ObjectBatch batch;
  batch.Add("one", a, sizeof(a));
  batch.AddObject("two");
  batch.AddBuffer(b, sizeof(b));
  batch.AddBuffer(c, sizeof(c));
  batch.AddObject("none");
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch.key(1), "two");
  ASSERT_EQ(batch.buffers(1).size(), 2u);
  EXPECT_EQ(batch.buffers(1)[0].iov_base, b);
  EXPECT_EQ(batch.buffers(1)[1].iov_base, c);
  EXPECT_EQ(batch.bytes(0), 8u);
  EXPECT_EQ(batch.bytes(1), 20u);
  EXPECT_TRUE(batch.buffers(2).empty());
  EXPECT_EQ(batch.bytes(2), 0u);
}

TEST(ObjectBatchTest, PartAndSubsetCarryKeysAndBuffers) {
  std::vector<char> mem(100);
  ObjectBatch batch;
  for (int i = 0; i < 5; ++i) batch.Add("k" + std::to_string(i), mem.data() + 10 * i, 10 + i);
  ObjectBatch part = batch.Part(1, 3);
  ASSERT_EQ(part.size(), 2u);
  EXPECT_EQ(part.key(0), "k1");
  EXPECT_EQ(part.buffers(1)[0].iov_base, mem.data() + 20);
  EXPECT_EQ(part.bytes(1), 12u);
  ObjectBatch some = batch.Subset({4, 0});
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some.key(0), "k4");
  EXPECT_EQ(some.bytes(0), 14u);
  EXPECT_EQ(some.key(1), "k0");
}

TEST(BatchCheckTest, PlacementNeedsAReplicaAndOneGroupIdPerObject) {
  ReplicateConfig config;
  EXPECT_TRUE(CheckPlacement(config, 2).ok());
  config.replica_num = 0;
  EXPECT_EQ(CheckPlacement(config, 2).code(), ErrorCode::INVALID_PARAMS);
  config.replica_num = 1;
  config.group_ids = {"g"};
  EXPECT_EQ(CheckPlacement(config, 2).code(), ErrorCode::INVALID_PARAMS);
  config.group_ids = {"g", "g"};
  EXPECT_TRUE(CheckPlacement(config, 2).ok());
}

TEST(BatchCheckTest, EachBadObjectFailsAloneAndEarlierFailuresStay) {
  char page[4];
  ObjectBatch batch;
  batch.Add("good", page, sizeof(page));
  batch.Add("", page, sizeof(page));
  batch.Add("empty", page, 0);
  batch.Add(std::string(5000, 'k'), page, sizeof(page));
  batch.Add("refused before", page, sizeof(page));
  std::vector<Status> results(batch.size());
  results[4] = Status(ErrorCode::INVALID_PARAMS, "mismatched lists");
  CheckPutObjects(batch, results);
  EXPECT_TRUE(results[0].ok());
  EXPECT_EQ(results[1].code(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(results[2].code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(results[2].message().find("key=empty"), std::string::npos);
  EXPECT_EQ(results[3].code(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(results[4].message(), "mismatched lists");

  std::vector<Result<uint64_t>> gets(batch.size(), uint64_t{0});
  CheckGetKeys(batch.keys(), gets);
  EXPECT_TRUE(gets[0].ok());
  EXPECT_EQ(gets[1].status().code(), ErrorCode::INVALID_KEY);
  EXPECT_TRUE(gets[2].ok());  // a get needs no size
  EXPECT_EQ(gets[3].status().code(), ErrorCode::INVALID_KEY);
}

}  // namespace
}  // namespace kvpool::client
