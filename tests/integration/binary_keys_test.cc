// Keys are bytes end to end (issue 16, item 4): keys that are not valid UTF-8 ("\xff\xfe...")
// round-trip through every call that carries a key, over the real wire, in embedded mode (the
// master's RPCs and the data plane), in standalone mode (the node's local socket), from a
// tenant whose id is not UTF-8 either, through the CLI and the master's admin JSON. Before the
// fix a reply quoting such a key (a miss: "key=... not found") did not parse, so one missing
// key failed its whole batch with RPC_FAIL "unparsable response".
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <thread>

#include "kvpool/host_allocator.h"
#include "standalone_support.h"

namespace kvpool::testing {
namespace {

using nlohmann::json;

const std::string kBad1("\xff\xfepage-1", 8);
const std::string kBad2("\x80\x81\xc0\xaf\xed\xa0\x80/2", 9);  // stray, overlong, surrogate
const std::string kNul("nul\0\xff-3", 8);
const std::string kGood = "utf8-\xc3\xa9";  // valid UTF-8 neighbours must not suffer
const std::string kMissing("\xff\xfemissing", 9);

constexpr size_t kSize = 4096;

std::vector<uint8_t> BytesOf(const std::string& key) {
  std::vector<uint8_t> b(kSize);
  FillObject(key, 0, b.data(), b.size());
  return b;
}

// Every key call of `c` with non-UTF-8 keys, including the misses whose replies quote them.
void ExerciseKeyCalls(Client& c) {
  const std::vector<std::string> keys = {kBad1, kBad2, kNul, kGood};
  std::vector<std::vector<uint8_t>> values;
  std::vector<std::span<const uint8_t>> spans;
  for (const auto& k : keys) values.push_back(BytesOf(k));
  for (const auto& v : values) spans.emplace_back(v);
  for (const Status& st : c.BatchPut(keys, spans)) ASSERT_TRUE(st.ok()) << st.ToString();
  // Put again: "already exists" is success, not an error.
  for (const Status& st : c.BatchPut({kBad1}, {spans[0]})) EXPECT_TRUE(st.ok()) << st.ToString();

  // One missing non-UTF-8 key among present ones: each key gets its own answer.
  auto got = c.BatchGet({kBad1, kMissing, kBad2, kNul, kGood});
  ASSERT_EQ(got.size(), 5u);
  ASSERT_TRUE(got[0].ok()) << got[0].status().ToString();
  EXPECT_EQ(*got[0], values[0]);
  EXPECT_EQ(got[1].status().code(), ErrorCode::OBJECT_NOT_FOUND) << got[1].status().ToString();
  EXPECT_NE(got[1].status().message().find(kMissing), std::string::npos)
      << got[1].status().ToString();  // the exact key bytes, not a replacement
  ASSERT_TRUE(got[2].ok()) << got[2].status().ToString();
  EXPECT_EQ(*got[2], values[1]);
  ASSERT_TRUE(got[3].ok()) << got[3].status().ToString();
  EXPECT_EQ(*got[3], values[2]);
  ASSERT_TRUE(got[4].ok()) << got[4].status().ToString();
  EXPECT_EQ(*got[4], values[3]);

  auto size = c.GetSize(kBad2);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, kSize);
  EXPECT_EQ(c.GetSize(kMissing).code(), ErrorCode::OBJECT_NOT_FOUND);

  auto exists = c.BatchIsExist({kBad1, kMissing, kNul});
  ASSERT_TRUE(exists[0].ok() && exists[1].ok() && exists[2].ok()) << exists[1].status().ToString();
  EXPECT_TRUE(*exists[0]);
  EXPECT_FALSE(*exists[1]);
  EXPECT_TRUE(*exists[2]);
  auto one = c.IsExist(kMissing);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_FALSE(*one);
  auto prefix = c.ExistsPrefix({kBad1, kBad2, kMissing, kGood});
  ASSERT_TRUE(prefix.ok()) << prefix.status().ToString();
  EXPECT_EQ(*prefix, 2u);

  // force: the gets above hold read leases.
  auto removed = c.BatchRemove({kBad2, kMissing}, /*force=*/true);
  EXPECT_TRUE(removed[0].ok()) << removed[0].ToString();
  EXPECT_EQ(removed[1].code(), ErrorCode::OBJECT_NOT_FOUND) << removed[1].ToString();
  EXPECT_NE(removed[1].message().find(kMissing), std::string::npos) << removed[1].ToString();
  Status rm = c.Remove(kMissing, /*force=*/true);
  EXPECT_EQ(rm.code(), ErrorCode::OBJECT_NOT_FOUND) << rm.ToString();
  EXPECT_TRUE(c.Remove(kNul, /*force=*/true).ok());
  auto after = c.BatchGet({kBad2, kNul, kBad1});
  EXPECT_EQ(after[0].status().code(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(after[1].status().code(), ErrorCode::OBJECT_NOT_FOUND);
  ASSERT_TRUE(after[2].ok()) << after[2].status().ToString();
  EXPECT_EQ(*after[2], values[0]);
}

// The zero-copy calls (registered memory, one data request per segment).
void ExerciseZeroCopy(Client& c, uint8_t* mem, size_t room) {
  ASSERT_GE(room, 6 * kSize);
  const std::vector<std::string> keys = {kBad1 + "-zc", kBad2 + "-zc"};
  std::vector<const void*> src;
  std::vector<void*> dst;
  std::vector<size_t> sizes(2, kSize);
  for (size_t i = 0; i < keys.size(); ++i) {
    FillObject(keys[i], 0, mem + i * kSize, kSize);
    src.push_back(mem + i * kSize);
    dst.push_back(mem + (3 + i) * kSize);
  }
  for (const Status& st : c.BatchPutFrom(keys, src, sizes)) ASSERT_TRUE(st.ok()) << st.ToString();
  std::memset(mem + 3 * kSize, 0, 3 * kSize);
  auto got = c.BatchGetInto({keys[0], kMissing, keys[1]}, {dst[0], mem + 5 * kSize, dst[1]},
                            {kSize, kSize, kSize});
  ASSERT_TRUE(got[0].ok()) << got[0].status().ToString();
  EXPECT_EQ(got[1].status().code(), ErrorCode::OBJECT_NOT_FOUND) << got[1].status().ToString();
  ASSERT_TRUE(got[2].ok()) << got[2].status().ToString();
  EXPECT_EQ(std::memcmp(mem, mem + 3 * kSize, 2 * kSize), 0);
  auto single = c.GetInto(kMissing, mem + 5 * kSize, kSize);
  EXPECT_EQ(single.status().code(), ErrorCode::OBJECT_NOT_FOUND) << single.status().ToString();
}

TEST(BinaryKeysTest, EmbeddedClientEveryKeyCall) {
  Pool pool({"--eviction_ratio", "0"});
  pool.AddNode("32MB");
  auto c = pool.NewClient();
  ASSERT_NE(c, nullptr);
  ExerciseKeyCalls(*c);
  std::vector<uint8_t> mem(8 * kSize);
  ASSERT_TRUE(c->RegisterBuffer(mem.data(), mem.size()).ok());
  ExerciseZeroCopy(*c, mem.data(), mem.size());
}

// The embedded client's own segment: replicas placed in this process and read by a peer.
TEST(BinaryKeysTest, EmbeddedSegmentServesNonUtf8Keys) {
  Pool pool({"--eviction_ratio", "0"});
  ClientOptions o;
  o.global_segment_size = 16 << 20;
  auto host = pool.NewClient(o);
  ASSERT_NE(host, nullptr);
  ASSERT_TRUE(pool.WaitForSegments(1));
  ExerciseKeyCalls(*host);
  auto peer = pool.NewClient();
  ASSERT_NE(peer, nullptr);
  auto got = peer->BatchGet({kBad1, kMissing});
  ASSERT_TRUE(got[0].ok()) << got[0].status().ToString();
  EXPECT_EQ(*got[0], BytesOf(kBad1));
  EXPECT_EQ(got[1].status().code(), ErrorCode::OBJECT_NOT_FOUND);
}

TEST(BinaryKeysTest, TenantIdThatIsNotUtf8) {
  Pool pool({"--eviction_ratio", "0"});
  pool.AddNode("32MB");
  ClientOptions o;
  o.tenant_id = std::string("\xfe\xfftenant", 8);
  auto t = pool.NewClient(o);
  ASSERT_NE(t, nullptr);
  ExerciseKeyCalls(*t);
  auto def = pool.NewClient();  // the default tenant sees none of it
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->BatchGet({kBad1})[0].status().code(), ErrorCode::OBJECT_NOT_FOUND);
}

TEST(BinaryKeysTest, StandaloneClientEveryKeyCall) {
  Pool pool({"--eviction_ratio", "0"});
  const uint16_t port = FreePort();
  auto node = StartNode(pool, port, "32MB");
  ASSERT_TRUE(pool.WaitForSegments(1));
  auto c = Attach(StandaloneFor(port));
  ASSERT_NE(c, nullptr);
  ExerciseKeyCalls(*c);
  HostMemAllocator alloc;
  auto mem = alloc.Alloc(8 * kSize);
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  ASSERT_TRUE(c->RegisterBuffer(*mem, 8 * kSize).ok());
  ExerciseZeroCopy(*c, static_cast<uint8_t*>(*mem), 8 * kSize);
  c.reset();
  (void)alloc.Free(*mem);
}

// The keys a segment host journals and re-registers (JournalEntry.key, StoredObject.key) after a
// master restart: a restarted master lists non-UTF-8 keys again with their own bytes.
TEST(BinaryKeysTest, MasterRestartRestoresNonUtf8Keys) {
  Pool pool({"--eviction_ratio", "0"});
  pool.AddNode("32MB");
  ClientOptions o;
  o.rpc_timeout = std::chrono::milliseconds(1000);
  auto c = pool.NewClient(o);
  ASSERT_NE(c, nullptr);
  const std::vector<std::string> keys = {kBad1, kBad2, kNul};
  std::vector<std::vector<uint8_t>> values;
  std::vector<std::span<const uint8_t>> spans;
  for (const auto& k : keys) values.push_back(BytesOf(k));
  for (const auto& v : values) spans.emplace_back(v);
  for (const Status& st : c->BatchPut(keys, spans)) ASSERT_TRUE(st.ok()) << st.ToString();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // commits reach the host's list
  pool.KillMaster();
  pool.StartMaster();
  ASSERT_TRUE(pool.WaitForSegments(1)) << pool.master().Log();
  std::vector<Result<std::vector<uint8_t>>> got;
  for (int i = 0; i < 100; ++i) {  // the host re-registers within about a heartbeat
    got = c->BatchGet(keys);
    if (got[0].ok() && got[1].ok() && got[2].ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << i << ": " << got[i].status().ToString() << "\n"
                             << pool.node(0).Log();
    EXPECT_EQ(*got[i], values[i]) << i;
  }
}

std::string TempPath() {
  char tmpl[] = "/tmp/kvpool-binkey-XXXXXX";
  int fd = mkstemp(tmpl);
  close(fd);
  return tmpl;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What the CLI prints is text: the key's bytes escaped (\xNN), never raw invalid UTF-8.
TEST(BinaryKeysTest, CliPrintsKeysEscapedAndFindsThem) {
  Pool pool;
  pool.AddNode("16MB");
  const std::string m = pool.master_address();
  const std::string in = TempPath(), out = TempPath();
  std::ofstream(in, std::ios::binary) << "value bytes";

  auto r = RunCommand(kBinary, {"get", kMissing, out, "--master", m});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("OBJECT_NOT_FOUND"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\\xff\\xfemissing"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(kMissing), std::string::npos) << "raw key bytes printed";

  r = RunCommand(kBinary, {"put", kBad1, in, "--master", m});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("put \\xff\\xfepage-1"), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"exists", kBad1, "--master", m});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(kBinary, {"get", kBad1, out, "--master", m});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadAll(out), "value bytes");
  EXPECT_NE(r.output.find("got \\xff\\xfepage-1"), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"rm", kBad1, "--master", m, "--force"});  // the get left a lease
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("removed \\xff\\xfepage-1"), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"exists", kBad1, "--master", m});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  unlink(in.c_str());
  unlink(out.c_str());
}

std::string Hex(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

// The master's admin JSON (nlohmann-json throws on invalid UTF-8 unless told otherwise): the
// listing names each non-UTF-8 key exactly through key_hex, and errors about such keys are
// valid JSON that quotes the key escaped.
TEST(BinaryKeysTest, AdminJsonListsAndReportsNonUtf8Keys) {
  const uint16_t http = FreePort();
  Pool pool({"--metrics_port", std::to_string(http), "--eviction_ratio", "0"});
  ASSERT_TRUE(WaitForPort(http, std::chrono::seconds(10))) << pool.master().Log();
  pool.AddNode("16MB");
  auto c = pool.NewClient();
  ASSERT_NE(c, nullptr);
  auto v = BytesOf(kBad1);
  ASSERT_TRUE(c->BatchPut({kBad1}, {std::span<const uint8_t>(v)})[0].ok());

  httplib::Client h("127.0.0.1", http);
  h.set_connection_timeout(5);
  h.set_read_timeout(5);
  auto get = [&](const std::string& path, int want) {
    auto r = h.Get(path);
    EXPECT_TRUE(r) << path;
    if (!r) return json();
    EXPECT_EQ(r->status, want) << path << ": " << r->body;
    json j = json::parse(r->body, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << path << ": " << r->body;
    return j;
  };
  json list = get("/objects", 200);
  ASSERT_EQ(list["objects"].size(), 1u) << list.dump();
  EXPECT_EQ(list["objects"][0]["key_hex"], Hex(kBad1)) << list.dump();
  json prefixed = get("/objects?prefix=%FF%FE", 200);
  EXPECT_EQ(prefixed["objects"].size(), 1u) << prefixed.dump();
  json one = get("/object?key_hex=" + Hex(kBad1), 200);
  EXPECT_EQ(one["key_hex"], Hex(kBad1)) << one.dump();
  EXPECT_EQ(one["size"], kSize);
  json miss = get("/object?key_hex=" + Hex(kMissing), 404);
  EXPECT_EQ(miss["code"], "OBJECT_NOT_FOUND") << miss.dump();
  EXPECT_NE(miss["message"].get<std::string>().find("\\xff\\xfemissing"), std::string::npos)
      << miss.dump();
  json raw = get("/object?key=%FF%FEmissing", 404);
  EXPECT_EQ(raw["code"], "OBJECT_NOT_FOUND") << raw.dump();
}

}  // namespace
}  // namespace kvpool::testing
