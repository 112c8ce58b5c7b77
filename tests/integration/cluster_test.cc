// Cluster behaviour with real processes (one master, 2–3 nodes on 127.0.0.1): replicas survive
// the kill -9 of any one node, a node paused past the client TTL never serves stale bytes once
// it is back, and a flipped byte in a node's segment is caught as CHECKSUM_MISMATCH (or read
// from another replica).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <random>

#include "cluster_support.h"
#include "master_client/master_client.h"
#include "pool.h"
#include "rpc/endpoint.h"

namespace kvpool::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Steady = std::chrono::steady_clock;

// Gets and puts fail fast against a dead or stopped node in these tests.
ClientOptions TestClientOptions(bool verify = true) {
  ClientOptions o;
  o.verify_checksum = verify;
  o.rpc_timeout = milliseconds(2000);
  o.transfer_timeout = milliseconds(2000);
  return o;
}

ReplicateConfig Replicas(size_t n, std::vector<std::string> preferred = {}) {
  ReplicateConfig c;
  c.replica_num = n;
  c.preferred_segments = std::move(preferred);
  return c;
}

// Puts version `version` of every key (sizes[i] bytes); expects every put to succeed.
void PutVersion(Client& c, const std::vector<std::string>& keys, const std::vector<size_t>& sizes,
                uint32_t version, const ReplicateConfig& config) {
  std::vector<std::vector<uint8_t>> values;
  std::vector<std::span<const uint8_t>> spans;
  for (size_t i = 0; i < keys.size(); ++i)
    values.push_back(ObjectBytes(keys[i], version, sizes[i]));
  for (const auto& v : values) spans.emplace_back(v);
  auto r = c.BatchPut(keys, spans, config);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(r[i].ok()) << keys[i] << ": " << r[i].ToString();
  }
}

// Reads every key and expects it to be version `version`, byte-exact.
void ExpectVersion(Client& c, const std::vector<std::string>& keys,
                   const std::vector<size_t>& sizes, uint32_t version) {
  auto got = c.BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << got[i].status().ToString();
    EXPECT_TRUE(*got[i] == ObjectBytes(keys[i], version, sizes[i]))
        << keys[i] << ": bytes differ from version " << version;
  }
}

std::vector<size_t> RandomSizes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> d(1 << 10, 200 << 10);
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(d(rng));
  return out;
}

std::vector<std::string> Keys(const std::string& prefix, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

bool WaitForSegmentCount(Client& c, size_t n, seconds timeout) {
  for (auto end = Steady::now() + timeout; Steady::now() < end;) {
    auto s = c.Stat();
    if (s.ok() && s->segments.size() == n) return true;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return false;
}

// replica_num=2 on three nodes: whichever node is killed, every object reads back byte-exact,
// both at once (the client falls back from the dead replica) and after the master dropped it.
class KillOneNodeTest : public ::testing::TestWithParam<size_t> {};

TEST_P(KillOneNodeTest, EveryObjectSurvivesWithTwoReplicas) {
  Pool pool({"--client_ttl", "2"});
  for (int i = 0; i < 3; ++i) pool.AddNode("16MB");
  auto c = pool.NewClient(TestClientOptions());
  ASSERT_NE(c, nullptr);
  const auto keys = Keys("page-", 48);
  const auto sizes = RandomSizes(keys.size(), 7);
  ASSERT_NO_FATAL_FAILURE(PutVersion(*c, keys, sizes, 1, Replicas(2)));

  master::MasterClient probe(*rpc::ParseEndpoint(pool.master_address()), "probe");
  auto located = probe.GetReplicaList(keys, /*no_lease=*/true, DeadlineAfter(seconds(5)));
  ASSERT_TRUE(located.ok());
  size_t on_victim = 0;
  for (const auto& loc : located->objects()) {
    ASSERT_EQ(loc.replicas_size(), 2) << "each object needs 2 replicas on distinct segments";
    EXPECT_NE(loc.replicas(0).segment_name(), loc.replicas(1).segment_name());
    for (const auto& r : loc.replicas())
      on_victim += r.segment_name() == pool.node_segment(GetParam());
  }
  EXPECT_GT(on_victim, 0u) << "the victim holds no replica: the test proves nothing";

  pool.KillNode(GetParam());
  auto killed = Steady::now();
  ASSERT_NO_FATAL_FAILURE(ExpectVersion(*c, keys, sizes, 1));  // fallback, node still listed
  EXPECT_LT(Steady::now() - killed, seconds(5));
  ASSERT_TRUE(WaitForSegmentCount(*c, 2, seconds(10))) << "dead node not dropped within the TTL";
  ASSERT_NO_FATAL_FAILURE(ExpectVersion(*c, keys, sizes, 1));  // surviving replicas only
}

INSTANTIATE_TEST_SUITE_P(AnyNode, KillOneNodeTest, ::testing::Values(0, 1, 2));

// A node stopped (SIGSTOP) past the client TTL is declared dead; its objects disappear, are put
// again elsewhere, and once the node resumes and re-registers as new, its segment is filled with
// other objects. No get ever returns the old version's bytes.
TEST(ClusterTest, NodePausedPastTtlNeverServesStaleBytes) {
  Pool pool({"--client_ttl", "2"});
  for (int i = 0; i < 3; ++i) pool.AddNode("16MB");
  auto c = pool.NewClient(TestClientOptions());
  ASSERT_NE(c, nullptr);
  const auto keys = Keys("old-", 16);
  const auto sizes = RandomSizes(keys.size(), 11);
  const std::string paused = pool.node_segment(0);
  ASSERT_NO_FATAL_FAILURE(PutVersion(*c, keys, sizes, 1, Replicas(1, {paused})));

  pool.node(0).Pause();
  // A get against the stopped node fails within its deadline instead of hanging.
  auto asked = Steady::now();
  auto r = c->BatchGet({keys[0]});
  EXPECT_FALSE(r[0].ok());
  EXPECT_LT(Steady::now() - asked, seconds(5)) << "a get to a stopped node outlived its deadline";

  ASSERT_TRUE(WaitForSegmentCount(*c, 2, seconds(10))) << "stopped node not declared dead";
  auto gone = c->BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_FALSE(gone[i].ok()) << keys[i];
  ASSERT_NO_FATAL_FAILURE(PutVersion(*c, keys, sizes, 2, Replicas(1)));  // on the other nodes

  pool.node(0).Resume();
  ASSERT_TRUE(pool.WaitForSegment(paused)) << "resumed node did not re-register";
  const auto fill = Keys("fill-", 32);
  const auto fill_sizes = RandomSizes(fill.size(), 13);
  ASSERT_NO_FATAL_FAILURE(PutVersion(*c, fill, fill_sizes, 1, Replicas(1, {paused})));

  ASSERT_NO_FATAL_FAILURE(ExpectVersion(*c, keys, sizes, 2));
  ASSERT_NO_FATAL_FAILURE(ExpectVersion(*c, fill, fill_sizes, 1));
}

// A silent node (stopped: its connections stay open and answer nothing, as under a partition)
// costs a batch whose keys all have a replica elsewhere one silent_peer_timeout, not the data
// deadline: every key reads back exact from the other node. The next batch tries the silent
// node last and pays nothing. A key with its only replica there fails alone, within its
// deadline, with RPC_TIMEOUT.
TEST(ClusterTest, SilentNodeCostsAReadOneStallNotTheBatch) {
  Pool pool({"--client_ttl", "30"});  // the master must not notice during the test
  pool.AddNode("32MB");
  pool.AddNode("32MB");
  const std::string silent = pool.node_segment(0), live = pool.node_segment(1);
  ClientOptions o = TestClientOptions();
  o.transfer_timeout = seconds(10);
  auto c = pool.NewClient(o);
  ASSERT_NE(c, nullptr);
  const auto keys = Keys("twice-", 48);
  const std::vector<size_t> sizes(keys.size(), 256 << 10);
  ASSERT_NO_FATAL_FAILURE(PutVersion(*c, keys, sizes, 1, Replicas(2, {silent, live})));
  ASSERT_NO_FATAL_FAILURE(PutVersion(*c, {"only-there"}, {4096}, 1, Replicas(1, {silent})));
  ASSERT_NO_FATAL_FAILURE(ExpectVersion(*c, keys, sizes, 1));  // connections to both exist

  pool.node(0).Pause();
  auto asked = Steady::now();
  ASSERT_NO_FATAL_FAILURE(ExpectVersion(*c, keys, sizes, 1));
  const auto first = Steady::now() - asked;
  EXPECT_LT(first, milliseconds(2500)) << "the first batch waited out more than one stall";
  asked = Steady::now();
  ASSERT_NO_FATAL_FAILURE(ExpectVersion(*c, keys, sizes, 1));
  EXPECT_LT(Steady::now() - asked, milliseconds(700)) << "the silent node was tried first again";

  asked = Steady::now();
  auto mixed = c->BatchGet({"only-there", keys[0]});
  const auto took = Steady::now() - asked;
  ASSERT_FALSE(mixed[0].ok());
  EXPECT_EQ(mixed[0].status().code(), ErrorCode::RPC_TIMEOUT) << mixed[0].status().ToString();
  ASSERT_TRUE(mixed[1].ok()) << mixed[1].status().ToString();
  EXPECT_TRUE(*mixed[1] == ObjectBytes(keys[0], 1, sizes[0]));
  EXPECT_LT(took, seconds(12)) << "a key with no other replica outlived its data deadline";
  pool.node(0).Resume();
}

// A bit flipped in a node's DRAM: with verify_checksum, the key that has no other replica reports
// CHECKSUM_MISMATCH, a key with a second replica reads back exact from it, and the rest of the
// batch is untouched. Without verification the wrong bytes would be returned as data.
TEST(ClusterTest, CorruptedSegmentByteIsCaught) {
  Pool pool;
  pool.AddNode("16MB");
  pool.AddNode("16MB");
  const std::string bad = pool.node_segment(0), good = pool.node_segment(1);
  auto c = pool.NewClient(TestClientOptions());
  ASSERT_NE(c, nullptr);
  const size_t kSize = 64 << 10;
  ASSERT_NO_FATAL_FAILURE(PutVersion(*c, {"single"}, {kSize}, 1, Replicas(1, {bad})));
  ASSERT_NO_FATAL_FAILURE(PutVersion(*c, {"double"}, {kSize}, 1, Replicas(2, {bad, good})));
  ASSERT_NO_FATAL_FAILURE(PutVersion(*c, {"elsewhere"}, {kSize}, 1, Replicas(1, {good})));

  master::MasterClient probe(*rpc::ParseEndpoint(pool.master_address()), "probe");
  std::vector<std::string> corrupted = {"single", "double"};
  auto located = probe.GetReplicaList(corrupted, /*no_lease=*/true, DeadlineAfter(seconds(5)));
  ASSERT_TRUE(located.ok());
  const uintptr_t base = SegmentBase(pool.node(0));
  ASSERT_NE(base, 0u) << "node did not log its segment base:\n" << pool.node(0).Log();
  for (const auto& loc : located->objects()) {
    ASSERT_GT(loc.replicas_size(), 0);
    ASSERT_EQ(loc.replicas(0).segment_name(), bad);
    ASSERT_TRUE(FlipByte(pool.node(0).pid(), base + loc.replicas(0).offset() + 12345))
        << "could not write /proc/" << pool.node(0).pid() << "/mem";
  }

  auto got = c->BatchGet({"single", "double", "elsewhere"});
  ASSERT_FALSE(got[0].ok());
  EXPECT_EQ(got[0].status().code(), ErrorCode::CHECKSUM_MISMATCH) << got[0].status().ToString();
  ASSERT_TRUE(got[1].ok()) << got[1].status().ToString();
  EXPECT_TRUE(*got[1] == ObjectBytes("double", 1, kSize));
  ASSERT_TRUE(got[2].ok()) << got[2].status().ToString();
  EXPECT_TRUE(*got[2] == ObjectBytes("elsewhere", 1, kSize));

  // Standalone mode: the node reads and hashes on the attached client's behalf.
  StandaloneOptions so;
  so.server_address = bad;
  so.verify_checksum = true;
  so.rpc_timeout = milliseconds(2000);
  so.transfer_timeout = milliseconds(2000);
  auto attached = Client::SetupStandalone(so);
  ASSERT_TRUE(attached.ok()) << attached.status().ToString();
  auto via_node = (*attached)->BatchGet({"single", "elsewhere"});
  ASSERT_FALSE(via_node[0].ok());
  EXPECT_EQ(via_node[0].status().code(), ErrorCode::CHECKSUM_MISMATCH);
  ASSERT_TRUE(via_node[1].ok()) << via_node[1].status().ToString();
  EXPECT_TRUE(*via_node[1] == ObjectBytes("elsewhere", 1, kSize));

  auto unverified = pool.NewClient(TestClientOptions(/*verify=*/false));
  auto raw = unverified->BatchGet({"single"});
  ASSERT_TRUE(raw[0].ok());
  EXPECT_FALSE(*raw[0] == ObjectBytes("single", 1, kSize)) << "the byte was not flipped";
}

}  // namespace
}  // namespace kvpool::testing
