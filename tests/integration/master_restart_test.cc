// Master restart without loss (docs/failure-model.md): a master killed with SIGKILL and started
// again on the same port under a steady put/get workload. The nodes re-register their segments
// with their object lists; objects complete before the kill read back byte-exact after it, and
// no client call blocks past its deadline while the master is away.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "pool.h"
#include "put_get_workload.h"

namespace kvpool::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Small values: the run must stay below the eviction watermark (3 x 64 MiB), or objects put
// before the kill would be evicted, not lost.
constexpr size_t kValueBytes = 4 << 10;
constexpr size_t kBatch = 8;

std::vector<uint8_t> ValueOf(const std::string& key) { return ObjectBytes(key, 0, kValueBytes); }

// kBatch fresh keys per round at a steady pace (at most ~4,000 puts/s), so the run stays below
// the eviction watermark.
PutGetWorkloadOptions RestartWorkload() {
  PutGetWorkloadOptions o;
  o.key_prefix = "restart-";
  o.value_bytes = kValueBytes;
  o.batch = kBatch;
  o.pause_after_put = std::chrono::milliseconds(2);
  o.pause_after_failure = std::chrono::milliseconds(20);
  return o;
}

TEST(MasterRestartTest, ObjectsSurviveAMasterKilledUnderLoad) {
  Pool pool;
  for (int i = 0; i < 3; ++i) pool.AddNode("64MB");
  ClientOptions o;
  o.rpc_timeout = std::chrono::milliseconds(1000);
  o.transfer_timeout = std::chrono::milliseconds(2000);
  o.verify_checksum = true;  // the comparison below checks the bytes too; this checks the list
  auto client = pool.NewClient(o);
  ASSERT_NE(client, nullptr);
  PutGetWorkload w(client.get(), RestartWorkload());
  w.Start();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const auto kill_at = SteadyClock::now();
  pool.KillMaster();  // SIGKILL: nothing is flushed, nothing said goodbye
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  pool.StartMaster();
  ASSERT_TRUE(pool.WaitForSegments(3)) << pool.master().Log();
  const auto back_at = SteadyClock::now();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  w.Stop();

  auto done = w.completed();
  std::vector<std::string> before;
  size_t after = 0;
  for (const auto& d : done) {
    if (d.at < kill_at) before.push_back(d.key);
    if (d.at > back_at) ++after;
  }
  ASSERT_GT(before.size(), 100u) << "the workload made too little progress before the kill";
  EXPECT_GT(after, 0u) << "no put succeeded after the master came back";
  size_t intact = 0, wrong = 0;
  for (size_t i = 0; i < before.size(); i += 64) {
    std::vector<std::string> keys(before.begin() + i,
                                  before.begin() + std::min(before.size(), i + 64));
    auto got = client->BatchGet(keys);
    for (size_t k = 0; k < keys.size(); ++k) {
      if (!got[k].ok()) continue;
      if (*got[k] == ValueOf(keys[k])) {
        ++intact;
      } else {
        ++wrong;
      }
    }
  }
  double ratio = static_cast<double>(intact) / static_cast<double>(before.size());
  std::printf(
      "objects complete before the kill: %zu, read back byte-exact after: %zu (%.2f %%), "
      "longest call: %lld ms, failed calls during the run: %zu\n",
      before.size(), intact, 100.0 * ratio,
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(w.longest_call()).count()),
      w.failed_calls());
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(w.wrong_bytes(), 0u);
  EXPECT_GE(ratio, 0.99) << "master:\n"
                         << pool.master().Log() << "\nnode 0:\n"
                         << pool.node(0).Log();
  // A put is at most two control calls and one data phase; a get one and one. Allow 1 s for
  // scheduling (ASan, two shared cores).
  EXPECT_LE(w.longest_call(), 2 * o.rpc_timeout + o.transfer_timeout + std::chrono::seconds(1));
}

// A client that replaces a key (upsert, or remove then put) on another node, and sees its call
// answered, must not read the replaced version after a master restart: the master answers only
// once the old node dropped it from the list it re-registers with (MasterService::Handle). Each
// round kills the master right after the answer, when the old node's journal entry is at most
// a round trip old; before that wait, about half such rounds restored the old version. From the
// second round on the nodes have just re-registered at a restarted master: they must count as
// keeping lists at once, and acknowledge its journal within a ping, not a heartbeat later.
TEST(MasterRestartTest, AReplacedVersionDoesNotComeBackAfterARestart) {
  Pool pool;
  pool.AddNode("64MB");
  pool.AddNode("64MB");
  ClientOptions o;
  o.rpc_timeout = std::chrono::milliseconds(1000);
  o.verify_checksum = true;
  auto client = pool.NewClient(o);
  ASSERT_NE(client, nullptr);
  const std::string key = "replaced";
  std::vector<std::vector<uint8_t>> versions;
  for (uint32_t v = 0; v < 7; ++v) versions.push_back(ObjectBytes(key, v, kValueBytes));
  for (auto& bytes : versions) ASSERT_TRUE(client->RegisterBuffer(bytes.data(), bytes.size()).ok());
  auto put_on = [&](uint32_t v, bool upsert) {
    ReplicateConfig cfg;
    cfg.preferred_segments = {pool.node_segment(v % 2)};
    std::vector<std::string> keys = {key};
    std::vector<const void*> ptrs = {versions[v].data()};
    std::vector<size_t> sizes = {kValueBytes};
    return upsert ? client->BatchUpsertFrom(keys, ptrs, sizes, cfg)[0]
                  : client->BatchPutFrom(keys, ptrs, sizes, cfg)[0];
  };
  ASSERT_TRUE(put_on(0, false).ok());
  for (uint32_t v = 1; v < versions.size(); ++v) {
    // Odd rounds upsert; even ones remove, then put.
    const auto start = SteadyClock::now();
    if (v % 2 == 0) {
      Status removed = client->Remove(key);
      ASSERT_TRUE(removed.ok()) << removed.ToString();
    }
    Status put = put_on(v, v % 2 == 1);
    ASSERT_TRUE(put.ok()) << "round " << v << ": " << put.ToString();
    // Well below --commit_ack_timeout_ms (1 s), after which the master answers anyway.
    EXPECT_LT(SteadyClock::now() - start, std::chrono::milliseconds(800))
        << "round " << v << ": the old node was slow to drop the replaced version";
    pool.KillMaster();
    pool.StartMaster();
    ASSERT_TRUE(pool.WaitForSegments(2)) << pool.master().Log();
    Result<std::vector<uint8_t>> got(Status(ErrorCode::RPC_FAIL, "not read"));
    // The first calls may still find a connection to the old master.
    for (int attempt = 0; attempt < 20; ++attempt) {
      got = std::move(client->BatchGet({key})[0]);
      if (got.ok() || got.status().code() != ErrorCode::RPC_FAIL) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(got.ok()) << "round " << v << ": " << got.status().ToString();
    EXPECT_EQ(*got, versions[v]) << "round " << v << " read back version "
                                 << (*got == versions[v - 1] ? "v-1 (the replaced one)" : "?");
  }
}

}  // namespace
}  // namespace kvpool::testing
