// A bounded soak (15 s): four nodes, replica_num=2, three clients putting and reading back with
// verify_checksum on while a node is killed (kill -9) and a fresh one started every 1.5 s.
// Gets may fail (both replicas gone, evicted, node just died) but a get that succeeds must
// return exactly the bytes that were put: the test asserts zero wrong bytes and reports counts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "cluster_support.h"
#include "pool.h"

namespace kvpool::testing {
namespace {

using std::chrono::milliseconds;

struct SoakCounts {
  std::atomic<uint64_t> puts_ok{0}, puts_failed{0};
  std::atomic<uint64_t> gets_ok{0}, gets_failed{0}, wrong_bytes{0};
  std::atomic<uint64_t> bytes_verified{0};
  std::mutex mu;
  std::map<std::string, uint64_t> failures;  // "put CODE" / "get CODE" -> count; guarded by mu

  void Failed(const char* op, const Status& st) {
    std::lock_guard lock(mu);
    ++failures[std::string(op) + " " + std::string(ErrorCodeName(st.code()))];
  }
};

// One client's loop: put a batch of new keys, then read back a random sample of its keys.
void Worker(Client& c, int id, const std::atomic<bool>& stop, SoakCounts& n) {
  constexpr size_t kBatch = 8;
  std::mt19937 rng(static_cast<uint32_t>(id * 7919 + 1));
  std::uniform_int_distribution<size_t> size_of(4 << 10, 64 << 10);
  std::vector<std::pair<std::string, size_t>> stored;
  ReplicateConfig config;
  config.replica_num = 2;
  for (uint64_t round = 0; !stop.load(); ++round) {
    std::vector<std::string> keys;
    std::vector<size_t> sizes;
    std::vector<std::vector<uint8_t>> values;
    std::vector<std::span<const uint8_t>> spans;
    for (size_t k = 0; k < kBatch; ++k) {
      keys.push_back("soak-" + std::to_string(id) + "-" + std::to_string(round * kBatch + k));
      sizes.push_back(size_of(rng));
      values.push_back(ObjectBytes(keys.back(), 1, sizes.back()));
    }
    for (const auto& v : values) spans.emplace_back(v);
    auto put = c.BatchPut(keys, spans, config);
    for (size_t k = 0; k < kBatch; ++k) {
      if (put[k].ok()) {
        ++n.puts_ok;
        stored.emplace_back(keys[k], sizes[k]);
      } else {
        ++n.puts_failed;
        n.Failed("put", put[k]);
      }
    }
    if (stored.empty()) continue;
    std::vector<std::string> want;
    std::vector<size_t> want_sizes;
    for (size_t k = 0; k < kBatch; ++k) {
      const auto& [key, size] =
          stored[std::uniform_int_distribution<size_t>(0, stored.size() - 1)(rng)];
      want.push_back(key);
      want_sizes.push_back(size);
    }
    auto got = c.BatchGet(want);
    for (size_t k = 0; k < want.size(); ++k) {
      if (!got[k].ok()) {
        ++n.gets_failed;
        n.Failed("get", got[k].status());
        continue;
      }
      ++n.gets_ok;
      if (*got[k] != ObjectBytes(want[k], 1, want_sizes[k])) {
        ++n.wrong_bytes;
        ADD_FAILURE() << "wrong bytes for " << want[k];
      } else {
        n.bytes_verified += want_sizes[k];
      }
    }
  }
}

TEST(ClusterSoakTest, RandomNodeKillsNeverReturnWrongBytes) {
  constexpr auto kDuration = std::chrono::seconds(15);
  constexpr auto kKillEvery = milliseconds(1500);
  Pool pool({"--client_ttl", "2"});
  for (int i = 0; i < 4; ++i) pool.AddNode("32MB");
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 3; ++i) {
    ClientOptions o;
    o.verify_checksum = true;
    o.rpc_timeout = milliseconds(2000);
    o.transfer_timeout = milliseconds(2000);
    clients.push_back(pool.NewClient(o));
    ASSERT_NE(clients.back(), nullptr);
  }
  std::atomic<bool> stop{false};
  SoakCounts n;
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&, i] { Worker(*clients[i], i, stop, n); });
  }
  std::mt19937 rng(42);
  size_t kills = 0;
  const auto end = std::chrono::steady_clock::now() + kDuration;
  while (std::chrono::steady_clock::now() + kKillEvery < end) {
    std::this_thread::sleep_for(kKillEvery);
    std::vector<size_t> alive;
    for (size_t i = 0; i < pool.node_count(); ++i) {
      if (pool.node_alive(i)) alive.push_back(i);
    }
    pool.KillNode(alive[std::uniform_int_distribution<size_t>(0, alive.size() - 1)(rng)]);
    ++kills;
    pool.AddNode("32MB");
  }
  std::this_thread::sleep_until(end);
  stop = true;
  for (auto& w : workers) w.join();

  std::printf(
      "soak: %zu node kills, puts ok=%lu failed=%lu, gets ok=%lu failed=%lu, wrong bytes=%lu, "
      "verified %.1f MiB\n",
      kills, static_cast<unsigned long>(n.puts_ok.load()),
      static_cast<unsigned long>(n.puts_failed.load()),
      static_cast<unsigned long>(n.gets_ok.load()),
      static_cast<unsigned long>(n.gets_failed.load()),
      static_cast<unsigned long>(n.wrong_bytes.load()),
      static_cast<double>(n.bytes_verified.load()) / (1 << 20));
  for (const auto& [what, count] : n.failures) {
    std::printf("soak: %s x%lu\n", what.c_str(), static_cast<unsigned long>(count));
  }
  RecordProperty("node_kills", std::to_string(kills));
  RecordProperty("gets_ok", std::to_string(n.gets_ok.load()));
  RecordProperty("gets_failed", std::to_string(n.gets_failed.load()));
  EXPECT_EQ(n.wrong_bytes.load(), 0u);
  EXPECT_GT(kills, 3u);
  EXPECT_GT(n.gets_ok.load(), 0u);
}

}  // namespace
}  // namespace kvpool::testing
