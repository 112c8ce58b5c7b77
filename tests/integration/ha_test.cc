// Master high availability through etcd (docs/failure-model.md, "Master high availability"):
// three masters and a real etcd, two nodes and clients that know only the etcd:// address.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <span>
#include <thread>

#include "ha_support.h"
#include "master_client/master_client.h"

namespace kvpool::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr size_t kObjects = 120;
constexpr size_t kValueBytes = 64 << 10;

std::string KeyOf(const std::string& prefix, size_t i) { return prefix + std::to_string(i); }
std::vector<uint8_t> ValueOf(const std::string& key) { return ObjectBytes(key, 0, kValueBytes); }

// Puts keys prefix0..prefix{n-1}; true when every put succeeded (retried until `timeout`: a put
// may meet a failover).
bool PutAll(Client& c, const std::string& prefix, size_t n, milliseconds timeout) {
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> values;
  for (size_t i = 0; i < n; ++i) {
    keys.push_back(KeyOf(prefix, i));
    values.push_back(ValueOf(keys.back()));
  }
  auto end = SteadyClock::now() + timeout;
  while (!keys.empty() && SteadyClock::now() < end) {
    std::vector<std::span<const uint8_t>> spans;
    spans.reserve(values.size());
    for (auto& v : values) spans.emplace_back(v.data(), v.size());
    auto st = c.BatchPut(keys, spans, ReplicateConfig{});
    std::vector<std::string> left_keys;
    std::vector<std::vector<uint8_t>> left_values;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!st[i].ok()) {
        left_keys.push_back(keys[i]);
        left_values.push_back(std::move(values[i]));
      }
    }
    keys = std::move(left_keys);
    values = std::move(left_values);
    if (!keys.empty()) std::this_thread::sleep_for(milliseconds(100));
  }
  return keys.empty();
}

struct ReadBack {
  size_t exact = 0;
  size_t wrong = 0;
  size_t failed = 0;
};

// Reads prefix0..prefix{n-1} until each is read (or `timeout`); counts exact and wrong bytes.
ReadBack ReadAll(Client& c, const std::string& prefix, size_t n, milliseconds timeout) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) keys.push_back(KeyOf(prefix, i));
  ReadBack r;
  auto end = SteadyClock::now() + timeout;
  while (!keys.empty() && SteadyClock::now() < end) {
    auto got = c.BatchGet(keys);
    std::vector<std::string> left;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!got[i].ok()) {
        left.push_back(keys[i]);
      } else if (*got[i] == ValueOf(keys[i])) {
        ++r.exact;
      } else {
        ++r.wrong;
      }
    }
    keys = std::move(left);
    if (!keys.empty()) std::this_thread::sleep_for(milliseconds(100));
  }
  r.failed = keys.size();
  return r;
}

TEST(HaTest, StandbyTakesOverAfterKill9AndKeepsEveryObject) {
  KVPOOL_REQUIRE_ETCD(etcd);
  HaPool pool(etcd, 3);  // three masters started at the same instant
  auto first = pool.WaitForLeader(seconds(15));
  ASSERT_TRUE(first.has_value()) << pool.Logs();
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(pool.CountRole("leader") + pool.CountRole("restoring"), 1u) << pool.Logs();
  EXPECT_EQ(pool.CountRole("standby"), 2u) << pool.Logs();

  pool.AddNode("64MB");
  pool.AddNode("64MB");
  auto writer = pool.NewClient();
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(pool.WaitForSegments(*writer, 2, seconds(20))) << pool.Logs();
  ASSERT_TRUE(PutAll(*writer, "ha-", kObjects, seconds(10))) << pool.Logs();
  std::this_thread::sleep_for(milliseconds(1500));  // the commits reach the nodes' lists

  // A standby refuses client RPCs with NOT_LEADER instead of serving its empty table.
  size_t standby = (*first + 1) % 3;
  master::MasterClient direct({"127.0.0.1", pool.rpc_port(standby)}, "probe");
  auto refused = direct.Stat(DeadlineAfter(seconds(2)));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), ErrorCode::NOT_LEADER) << refused.status().ToString();

  const auto killed_at = SteadyClock::now();
  pool.KillMaster(*first);
  auto next = pool.WaitForLeader(seconds(10), first);
  ASSERT_TRUE(next.has_value()) << "no standby leads 10 s after the leader's kill -9\n"
                                << pool.Logs();
  EXPECT_LT(SteadyClock::now() - killed_at, seconds(10));
  EXPECT_GT(pool.health(*next).epoch, 0u);

  // A client that was given only the etcd:// address reads everything back, byte-exact.
  auto reader = pool.NewClient();
  ASSERT_NE(reader, nullptr);
  ReadBack r = ReadAll(*reader, "ha-", kObjects, seconds(10));
  EXPECT_EQ(r.wrong, 0u);
  EXPECT_EQ(r.exact, kObjects) << pool.Logs();
  // The writer that saw the old leader follows the new one; new puts succeed.
  EXPECT_TRUE(PutAll(*writer, "ha-after-", 20, seconds(10))) << pool.Logs();
  ReadBack after = ReadAll(*reader, "ha-after-", 20, seconds(5));
  EXPECT_EQ(after.exact, 20u);
  EXPECT_EQ(after.wrong, 0u);

  // The old leader, restarted, joins as a standby.
  pool.StartMaster(*first);
  auto end = SteadyClock::now() + seconds(10);
  while (pool.health(*first).role != "standby" && SteadyClock::now() < end) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(pool.health(*first).role, "standby") << pool.master(*first)->Log();
  EXPECT_EQ(pool.health(*next).role, "leader");
  const std::string leader = "127.0.0.1:" + std::to_string(pool.rpc_port(*next));
  std::string m = pool.metrics(*next);
  EXPECT_NE(m.find("kvpool_master_ha_leader 1"), std::string::npos) << m;
  EXPECT_NE(m.find("role=\"leader\""), std::string::npos) << m;
  std::string sm = pool.metrics(*first);
  EXPECT_NE(sm.find("kvpool_master_ha_leader 0"), std::string::npos) << sm;
  EXPECT_NE(sm.find("leader=\"" + leader + "\""), std::string::npos) << sm;

  // `kvpool stat` through etcd names the leader.
  auto stat = RunCommand(kHaBinary, {"stat", "--master", pool.etcd_address()}, seconds(20));
  EXPECT_EQ(stat.exit_code, 0) << stat.output;
  EXPECT_NE(stat.output.find("leader 127.0.0.1:" + std::to_string(pool.rpc_port(*next))),
            std::string::npos)
      << stat.output;
}

TEST(HaTest, PausedLeaderNeverServesAgain) {
  KVPOOL_REQUIRE_ETCD(etcd);
  HaPool pool(etcd, 2);
  auto first = pool.WaitForLeader(seconds(15));
  ASSERT_TRUE(first.has_value()) << pool.Logs();
  pool.AddNode("64MB");
  auto client = pool.NewClient();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(pool.WaitForSegments(*client, 1, seconds(20))) << pool.Logs();
  ASSERT_TRUE(PutAll(*client, "pause-", 30, seconds(10)));
  // Let the commits reach the node's object list (the journal rides on its next heartbeat, up to
  // a second after its first mount): what a master loses otherwise (failure-model.md).
  std::this_thread::sleep_for(milliseconds(1500));

  // SIGSTOP past the lease (2 s): the standby takes over.
  pool.master(*first)->Pause();
  auto next = pool.WaitForLeader(seconds(10), first);
  ASSERT_TRUE(next.has_value()) << pool.Logs();
  const uint64_t new_epoch = pool.health(*next).epoch;

  // Resumed, the old leader answers nothing as leader: refusals while it drops its term.
  master::MasterClient direct({"127.0.0.1", pool.rpc_port(*first)}, "probe");
  pool.master(*first)->Resume();
  for (int i = 0; i < 20; ++i) {
    auto s = direct.Stat(DeadlineAfter(milliseconds(500)));
    ASSERT_FALSE(s.ok()) << "a paused leader served after resuming";
    EXPECT_TRUE(s.code() == ErrorCode::NOT_LEADER || s.code() == ErrorCode::RPC_FAIL ||
                s.code() == ErrorCode::RPC_TIMEOUT)
        << s.status().ToString();
    std::this_thread::sleep_for(milliseconds(20));
  }
  // It stays alive and rejoins the election as a standby (empty table) on the same ports,
  // refusing with NOT_LEADER naming the new leader.
  EXPECT_TRUE(pool.master(*first)->WaitForLog("lost leadership", milliseconds(5000)))
      << pool.master(*first)->Log();
  auto end = SteadyClock::now() + seconds(10);
  while (pool.health(*first).role != "standby" && SteadyClock::now() < end) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(pool.health(*first).role, "standby") << pool.master(*first)->Log();
  EXPECT_TRUE(pool.master(*first)->running()) << pool.master(*first)->Log();
  const std::string leader = "127.0.0.1:" + std::to_string(pool.rpc_port(*next));
  auto refused = direct.Stat(DeadlineAfter(seconds(2)));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), ErrorCode::NOT_LEADER) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find(leader), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(pool.health(*next).role, "leader");
  EXPECT_EQ(pool.health(*next).epoch, new_epoch);

  ReadBack r = ReadAll(*client, "pause-", 30, seconds(10));
  EXPECT_EQ(r.wrong, 0u);
  EXPECT_EQ(r.exact, 30u) << pool.Logs();

  // It leads again only by winning a new election, with a newer epoch, its table rebuilt from
  // the node.
  std::this_thread::sleep_for(milliseconds(1500));  // the new leader's journal reaches the node
  pool.KillMaster(*next);
  auto again = pool.WaitForLeader(seconds(10), next);
  ASSERT_TRUE(again.has_value()) << pool.Logs();
  EXPECT_EQ(*again, *first);
  EXPECT_GT(pool.health(*first).epoch, new_epoch);
  ReadBack r2 = ReadAll(*client, "pause-", 30, seconds(10));
  EXPECT_EQ(r2.wrong, 0u);
  EXPECT_EQ(r2.exact, 30u) << pool.Logs();
}

TEST(HaTest, EtcdDownStopsServingAndRestartedEtcdElectsALeader) {
  KVPOOL_REQUIRE_ETCD(etcd);
  HaPool pool(etcd, 3);
  auto first = pool.WaitForLeader(seconds(15));
  ASSERT_TRUE(first.has_value()) << pool.Logs();
  pool.AddNode("64MB");
  ClientOptions o;
  o.rpc_timeout = milliseconds(1000);
  auto client = pool.NewClient(o);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(pool.WaitForSegments(*client, 1, seconds(20))) << pool.Logs();
  ASSERT_TRUE(PutAll(*client, "etcd-", 30, seconds(10)));
  std::this_thread::sleep_for(milliseconds(1500));  // the commits reach the node's list

  // etcd gone for longer than the lease: the leader stops serving; nothing answers wrong bytes.
  pool.etcd().Kill();
  size_t wrong = 0, served_late = 0;
  auto down_at = SteadyClock::now();
  while (SteadyClock::now() - down_at < seconds(4)) {
    std::vector<std::string> keys = {"etcd-0", "etcd-7", "etcd-29"};
    auto got = client->BatchGet(keys);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (got[i].ok() && *got[i] != ValueOf(keys[i])) ++wrong;
      // The lease (2 s) minus the fence margin: nothing may be served after it.
      if (got[i].ok() && SteadyClock::now() - down_at > milliseconds(2500)) ++served_late;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(served_late, 0u) << "a master served without etcd past its lease";
  EXPECT_EQ(pool.CountRole("leader"), 0u);

  // etcd back (same data): a master leads again and the objects are all there.
  pool.etcd().Start();
  auto next = pool.WaitForLeader(seconds(15));
  ASSERT_TRUE(next.has_value()) << pool.Logs();
  auto reader = pool.NewClient();
  ASSERT_NE(reader, nullptr);
  ReadBack r = ReadAll(*reader, "etcd-", 30, seconds(10));
  EXPECT_EQ(r.wrong, 0u);
  EXPECT_EQ(r.exact, 30u) << pool.Logs();
}

// Issue 33: a node given a standby's address directly hears NOT_LEADER: it says no master
// leads, not that the master is unreachable (the network is fine).
TEST(HaTest, NodeToldNotLeaderDoesNotCallTheMasterUnreachable) {
  KVPOOL_REQUIRE_ETCD(etcd);
  HaPool pool(etcd, 2);
  auto first = pool.WaitForLeader(seconds(15));
  ASSERT_TRUE(first.has_value()) << pool.Logs();
  const size_t standby = (*first + 1) % 2;
  Process node(kHaBinary,
               NodeCommandLine(FreePort(), LoopbackAddress(pool.rpc_port(standby)), "16MB"),
               "node");
  EXPECT_TRUE(node.WaitForLog("no master leads", milliseconds(10000))) << node.Log();
  EXPECT_EQ(node.Log().find("master unreachable"), std::string::npos) << node.Log();
}

TEST(HaTest, BadEtcdAddressesFailClearlyWithExitCode1) {
  // Malformed: no etcd needed. The CLI, a node and a master alike exit 1 naming the address.
  for (const std::string bad : {"etcd://", "etcd://127.0.0.1:2379;;x", "etcd://h:2379/bad id"}) {
    for (const std::vector<std::string>& cli :
         {std::vector<std::string>{"stat"}, std::vector<std::string>{"exists", "k"}}) {
      std::vector<std::string> args = cli;
      args.insert(args.begin() + 1, {"--master", bad});
      const std::string& command = cli[0];
      auto r = RunCommand(kHaBinary, args, seconds(10));
      EXPECT_EQ(r.exit_code, 1) << command << " " << bad << "\n" << r.output;
      EXPECT_NE(r.output.find("'" + bad + "'"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("etcd://host:port"), std::string::npos) << r.output;
    }
    auto n = RunCommand(kHaBinary,
                        {"node", "--master_server_address", bad, "--global_segment_size", "1MB"},
                        seconds(10));
    EXPECT_EQ(n.exit_code, 1) << bad << "\n" << n.output;
    EXPECT_NE(n.output.find("--master_server_address"), std::string::npos) << n.output;
    EXPECT_NE(n.output.find("'" + bad + "'"), std::string::npos) << n.output;
  }
  struct BadMaster {
    std::vector<std::string> flags;
    std::string named;  // the flag and its text, as the message must show them
  };
  const std::vector<BadMaster> bad_masters = {
      {{"--etcd_endpoints", "127.0.0.1:2379;;"}, "--etcd_endpoints='127.0.0.1:2379;;'"},
      {{"--etcd_endpoints", "127.0.0.1:99999"}, "127.0.0.1:99999"},
      {{"--etcd_endpoints", "127.0.0.1:2379", "--cluster_id", "bad id"}, "--cluster_id='bad id'"},
  };
  for (const BadMaster& b : bad_masters) {
    std::vector<std::string> args = {"master", "--enable_ha",    "true", "--rpc_port",
                                     "0",      "--metrics_port", "0"};
    args.insert(args.end(), b.flags.begin(), b.flags.end());
    auto m = RunCommand(kHaBinary, args, seconds(10));
    EXPECT_EQ(m.exit_code, 1) << b.named << "\n" << m.output;
    EXPECT_NE(m.output.find(b.named), std::string::npos) << m.output;
  }
  // A missing one stays a usage error (exit code 2), as every missing flag.
  auto missing = RunCommand(
      kHaBinary, {"master", "--enable_ha", "true", "--rpc_port", "0", "--metrics_port", "0"},
      seconds(10));
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("--etcd_endpoints"), std::string::npos) << missing.output;

  // Unreachable etcd (nothing listens there): a clear error within the start-up deadline.
  const std::string closed = "127.0.0.1:" + std::to_string(FreePort());
  auto start = SteadyClock::now();
  auto master = RunCommand(kHaBinary,
                           {"master", "--enable_ha", "true", "--rpc_host", "127.0.0.1",
                            "--rpc_port", "0", "--metrics_port", "0", "--etcd_endpoints", closed},
                           seconds(20));
  EXPECT_EQ(master.exit_code, 1) << master.output;
  EXPECT_NE(master.output.find(closed), std::string::npos) << master.output;
  EXPECT_LT(SteadyClock::now() - start, seconds(8));
  start = SteadyClock::now();
  auto stat = RunCommand(
      kHaBinary, {"stat", "--master", "etcd://" + closed, "--timeout_ms", "2000"}, seconds(20));
  EXPECT_EQ(stat.exit_code, 1) << stat.output;
  EXPECT_NE(stat.output.find(closed), std::string::npos) << stat.output;
  EXPECT_LT(SteadyClock::now() - start, seconds(8));
}

}  // namespace
}  // namespace kvpool::testing
