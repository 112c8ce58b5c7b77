// Bad input and faults, each with the documented error, against real processes.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>
#include <thread>

#include "master_client/master_client.h"
#include "pool.h"
#include "rpc/endpoint.h"

namespace kvpool::testing {
namespace {

class ErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // No background (watermark) eviction: FullPoolWithNothingEvictableFailsPromptly fills the
    // segment past the high watermark, and the evictor would take the one unleased object, the
    // one just written, before the test reads it. Failed allocations still evict what they need.
    pool_ = std::make_unique<Pool>(std::vector<std::string>{"--eviction_ratio", "0"});
    pool_->AddNode("16MB");
    client_ = pool_->NewClient();
    ASSERT_NE(client_, nullptr);
    buf_.assign(8 << 20, 'x');
    ASSERT_TRUE(client_->RegisterBuffer(buf_.data(), buf_.size()).ok());
  }
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Client> client_;
  std::vector<char> buf_;
};

TEST_F(ErrorsTest, SmallBufferIsBufferOverflowAndUntouched) {
  ASSERT_TRUE(client_->PutFrom("big", buf_.data(), 1000).ok());
  std::vector<char> small(999, 'u');
  ASSERT_TRUE(client_->RegisterBuffer(small.data(), small.size()).ok());
  auto r = client_->GetInto("big", small.data(), small.size());
  EXPECT_EQ(r.code(), ErrorCode::BUFFER_OVERFLOW);
  EXPECT_EQ(std::string(small.begin(), small.end()), std::string(999, 'u'));
}

TEST_F(ErrorsTest, BadKeysAndSizes) {
  EXPECT_EQ(client_->PutFrom("", buf_.data(), 10).code(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(client_->PutFrom(std::string(4097, 'k'), buf_.data(), 10).code(),
            ErrorCode::INVALID_KEY);
  EXPECT_EQ(client_->PutFrom("zero", buf_.data(), 0).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client_->GetInto("", buf_.data(), 10).code(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(client_->IsExist("").code(), ErrorCode::INVALID_KEY);
  // One bad key in a batch fails only itself.
  auto rs = client_->BatchPutFrom({"ok1", "", "ok2"}, {buf_.data(), buf_.data(), buf_.data()},
                                  {10, 10, 10});
  EXPECT_TRUE(rs[0].ok());
  EXPECT_EQ(rs[1].code(), ErrorCode::INVALID_KEY);
  EXPECT_TRUE(rs[2].ok());
}

TEST_F(ErrorsTest, UnregisteredMemoryIsRefused) {
  std::vector<char> other(100, 'o');
  EXPECT_EQ(client_->PutFrom("k", other.data(), other.size()).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client_->GetInto("k", other.data(), other.size()).code(), ErrorCode::INVALID_PARAMS);
  // Straddling the end of the registered region.
  EXPECT_EQ(client_->PutFrom("k", buf_.data() + buf_.size() - 10, 20).code(),
            ErrorCode::INVALID_PARAMS);
}

TEST_F(ErrorsTest, MissingKeyAndImmutablePut) {
  EXPECT_EQ(client_->GetInto("nope", buf_.data(), 10).code(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(client_->GetSize("nope").code(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(client_->Remove("nope").code(), ErrorCode::OBJECT_NOT_FOUND);
  memset(buf_.data(), 'A', 100);
  ASSERT_TRUE(client_->PutFrom("imm", buf_.data(), 100).ok());
  memset(buf_.data(), 'B', 100);
  EXPECT_TRUE(client_->PutFrom("imm", buf_.data(), 100).ok());  // exists: OK, nothing written
  std::vector<char> back(100);
  ASSERT_TRUE(client_->RegisterBuffer(back.data(), back.size()).ok());
  ASSERT_EQ(*client_->GetInto("imm", back.data(), back.size()), 100u);
  EXPECT_EQ(std::string(back.begin(), back.end()), std::string(100, 'A'));
}

TEST_F(ErrorsTest, FullPoolWithNothingEvictableFailsPromptly) {
  auto start = std::chrono::steady_clock::now();
  // An object larger than every segment cannot be placed (until a larger node joins).
  std::vector<char> big(20 << 20, 'h');
  ASSERT_TRUE(client_->RegisterBuffer(big.data(), big.size()).ok());
  Status st = client_->PutFrom("too-big", big.data(), big.size());
  EXPECT_EQ(st.code(), ErrorCode::NO_AVAILABLE_HANDLE) << st.ToString();
  EXPECT_NE(st.message().find("too-big"), std::string::npos) << st.ToString();
  // Fill the 16 MB segment with hard-pinned objects (a read lease ends with its read, so reads
  // cannot hold a pool full): once it is full nothing is evictable and the next put fails at
  // once, saying why.
  ReplicateConfig pinned;
  pinned.with_hard_pin = true;
  int placed = 0;
  st = Status::Ok();
  for (int i = 0; i < 40 && st.ok(); ++i) {
    std::string k = "fill" + std::to_string(i);
    st = client_->PutFrom(k, buf_.data(), 1 << 20, pinned);
    if (st.ok()) {
      auto got = client_->GetInto(k, buf_.data(), 1 << 20);
      ASSERT_TRUE(got.ok()) << k << ": " << got.status().ToString();
      ++placed;
    }
  }
  EXPECT_EQ(st.code(), ErrorCode::NO_AVAILABLE_HANDLE) << st.ToString();
  EXPECT_NE(st.message().find("hard-pinned"), std::string::npos) << st.ToString();
  EXPECT_GE(placed, 14);
  auto stat = client_->Stat();
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->refused_leased_or_pinned, 1u);
  EXPECT_EQ(stat->refused_no_segment, 1u);  // too-big
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// A get's lease ends with the get; one still held (a reader mid-transfer, here taken straight
// from the master) refuses removal unless forced.
TEST_F(ErrorsTest, LeasedObjectRefusesRemoveUnlessForced) {
  ASSERT_TRUE(client_->PutFrom("read", buf_.data(), 100).ok());
  ASSERT_TRUE(client_->GetInto("read", buf_.data(), 100).ok());
  EXPECT_TRUE(client_->Remove("read").ok());
  ASSERT_TRUE(client_->PutFrom("leased", buf_.data(), 100).ok());
  auto ep = rpc::ParseEndpoint(pool_->master_address(), 0, "master");
  ASSERT_TRUE(ep.ok());
  master::MasterClient reader(*ep, "reader-mid-transfer");
  std::vector<std::string> keys = {"leased"};
  auto lease =
      reader.GetReplicaList(keys, /*no_lease=*/false, DeadlineAfter(std::chrono::seconds(5)));
  ASSERT_TRUE(lease.ok());
  ASSERT_NE(lease->lease_id(), 0u);
  EXPECT_EQ(client_->Remove("leased").code(), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_TRUE(client_->Remove("leased", /*force=*/true).ok());
  EXPECT_FALSE(*client_->IsExist("leased"));
}

TEST(MasterFaultsTest, UnreachableMasterFailsWithinDeadline) {
  ClientOptions o;
  o.master_server_address = "127.0.0.1:" + std::to_string(FreePort());
  o.rpc_timeout = std::chrono::milliseconds(1000);
  auto start = std::chrono::steady_clock::now();
  auto c = Client::Setup(o);
  EXPECT_EQ(c.code(), ErrorCode::RPC_FAIL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(MasterFaultsTest, DeadOrHungMasterTurnsIntoRpcErrors) {
  Pool pool;
  pool.AddNode("16MB");
  ClientOptions o;
  o.rpc_timeout = std::chrono::milliseconds(1000);
  auto client = pool.NewClient(o);
  ASSERT_NE(client, nullptr);
  std::vector<char> buf(4096, 'z');
  ASSERT_TRUE(client->RegisterBuffer(buf.data(), buf.size()).ok());
  ASSERT_TRUE(client->PutFrom("k", buf.data(), buf.size()).ok());

  pool.master().Pause();  // hung: accepts nothing, answers nothing
  auto start = std::chrono::steady_clock::now();
  auto r = client->GetInto("k", buf.data(), buf.size());
  EXPECT_TRUE(r.code() == ErrorCode::RPC_TIMEOUT || r.code() == ErrorCode::RPC_FAIL)
      << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
  EXPECT_EQ(client->HealthCheck(), 2);
  pool.master().Resume();

  pool.KillMaster();  // gone: connection refused
  start = std::chrono::steady_clock::now();
  EXPECT_EQ(client->IsExist("k").code(), ErrorCode::RPC_FAIL);
  EXPECT_EQ(client->PutFrom("k2", buf.data(), buf.size()).code(), ErrorCode::RPC_FAIL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
  EXPECT_EQ(client->HealthCheck(), 2);
  EXPECT_TRUE(client->Close().ok());
  EXPECT_EQ(client->HealthCheck(), 1);
}

TEST(MasterFaultsTest, GarbageOnTheMasterPortDoesNotHurtOthers) {
  Pool pool;
  pool.AddNode("16MB");
  auto r = RunCommand("/bin/sh", {"-c",
                                  "printf 'GARBAGE%.0s' $(seq 1 1000) | timeout 2 "
                                  "bash -c 'cat > /dev/tcp/127.0.0.1/" +
                                      pool.master_address().substr(10) + "' || true"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto client = pool.NewClient();
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->Stat().ok());
  EXPECT_TRUE(pool.master().WaitForLog("closing connection", std::chrono::seconds(5)))
      << pool.master().Log();
}

}  // namespace
}  // namespace kvpool::testing
