// A node killed -9 and started again at once on the same host:port is a new process with new,
// zeroed memory under the same segment name. Locations handed out for the old memory must
// never read the new memory (the segment's incarnation travels in every location and data
// request), and the new process must replace its dead predecessor at the master at once
// instead of waiting for the old registration to expire (docs/failure-model.md).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>

#include "pool.h"

namespace kvpool::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr size_t kObject = 1 << 20;
constexpr int kObjects = 8;

std::string Key(const std::string& prefix, int i) { return prefix + "-" + std::to_string(i); }

// Puts kObjects objects "prefix-i" of kObject bytes (version 1); returns how many succeeded.
int PutAll(Client& c, const std::string& prefix) {
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> values;
  std::vector<std::span<const uint8_t>> spans;
  for (int i = 0; i < kObjects; ++i) {
    keys.push_back(Key(prefix, i));
    values.push_back(ObjectBytes(keys.back(), 1, kObject));
  }
  for (const auto& v : values) spans.emplace_back(v);
  int ok = 0;
  for (const Status& st : c.BatchPut(keys, spans, ReplicateConfig{})) ok += st.ok() ? 1 : 0;
  return ok;
}

struct ReadCounts {
  int exact = 0;
  int failed = 0;
  int wrong = 0;
};

ReadCounts GetAll(Client& c, const std::string& prefix) {
  std::vector<std::string> keys;
  for (int i = 0; i < kObjects; ++i) keys.push_back(Key(prefix, i));
  ReadCounts n;
  auto got = c.BatchGet(keys);
  for (int i = 0; i < kObjects; ++i) {
    if (!got[i].ok()) {
      ++n.failed;
    } else if (*got[i] == ObjectBytes(keys[i], 1, kObject)) {
      ++n.exact;
    } else {
      ++n.wrong;
    }
  }
  return n;
}

TEST(NodeRestartTest, KilledAndRestartedAtOnceNeverServesItsNewMemoryAsOldData) {
  // client_ttl well above the test's length: the old registration must not be what heals it.
  Pool pool({"--client_ttl", "30"});
  pool.AddNode("64MB");
  ClientOptions o;
  o.rpc_timeout = milliseconds(2000);
  o.transfer_timeout = milliseconds(2000);
  auto c = pool.NewClient(o);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(PutAll(*c, "before"), kObjects);
  ASSERT_EQ(GetAll(*c, "before").exact, kObjects);

  const Clock::time_point started = Clock::now();
  Process& node = pool.RestartNode(0);
  // From the moment the new process runs: no read of the old objects returns bytes, and the
  // new node takes puts within 2 s of starting.
  double first_put_s = -1;
  ReadCounts old_reads;
  while (Clock::now() - started < std::chrono::seconds(5)) {
    ReadCounts r = GetAll(*c, "before");
    old_reads.exact += r.exact;
    old_reads.failed += r.failed;
    old_reads.wrong += r.wrong;
    if (first_put_s < 0 && PutAll(*c, "after") == kObjects) {
      first_put_s = std::chrono::duration<double>(Clock::now() - started).count();
    }
    if (first_put_s >= 0 && Clock::now() - started > std::chrono::seconds(3)) break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  std::printf("node restart: first put on the new node after %.3f s; old reads failed=%d\n",
              first_put_s, old_reads.failed);
  RecordProperty("first_put_seconds", std::to_string(first_put_s));
  EXPECT_EQ(old_reads.wrong, 0) << "bytes served for objects of the dead node's memory";
  EXPECT_EQ(old_reads.exact, 0) << "the old objects cannot exist in the new memory";
  ASSERT_GE(first_put_s, 0) << "the restarted node never took puts:\n" << node.Log();
  EXPECT_LT(first_put_s, 2.0) << node.Log();
  EXPECT_TRUE(node.WaitForLog("mounted segment=", milliseconds(1000))) << node.Log();
  EXPECT_EQ(node.Log().find("SEGMENT_ALREADY_EXISTS"), std::string::npos) << node.Log();
  // What was put on the new node stays: the old registration's later expiry is not its end.
  EXPECT_EQ(GetAll(*c, "after").exact, kObjects);
  auto stat = c->Stat();
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->segments.size(), 1u);
  EXPECT_TRUE(pool.master().WaitForLog("replaced: its host restarted", milliseconds(1000)))
      << pool.master().Log();
}

TEST(NodeRestartTest, CliGetAfterRestartFailsInsteadOfWritingZeros) {
  Pool pool({"--client_ttl", "30"});
  pool.AddNode("64MB");
  const std::string dir = ::testing::TempDir();
  const std::string in = dir + "/kvpool-restart-in.bin", out = dir + "/kvpool-restart-out.bin";
  {
    std::vector<uint8_t> bytes = ObjectBytes("cli-restart", 1, kObject);
    std::ofstream f(in, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(kObject));
  }
  const std::vector<std::string> master = {"--master", pool.master_address()};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), master.begin(), master.end());
    return args;
  };
  ASSERT_EQ(RunCommand(kBinary, with({"put", "cli-restart", in})).exit_code, 0);
  pool.RestartNode(0);
  // At once (before the new node mounted) and after it mounted: never exit 0 with bytes.
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::remove(out.c_str());
    RunResult r = RunCommand(kBinary, with({"get", "cli-restart", out}));
    EXPECT_NE(r.exit_code, 0) << r.output;
    std::ifstream f(out, std::ios::binary);
    std::string got((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(got.empty() ||
                got == std::string(reinterpret_cast<const char*>(
                                       ObjectBytes("cli-restart", 1, kObject).data()),
                                   kObject))
        << "get wrote " << got.size() << " bytes that are not the object's";
    ASSERT_TRUE(pool.node(0).WaitForLog("mounted segment=", std::chrono::seconds(5)));
  }
  std::remove(in.c_str());
  std::remove(out.c_str());
}

}  // namespace
}  // namespace kvpool::testing
