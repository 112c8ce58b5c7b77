// Read leases scoped to the transfer, against real processes: a get's lease ends with the get,
// a reader that exits or is killed leaves nothing behind, a stalled reader never gets another
// object's bytes, and an upsert under a reader never shows it a mix (docs/failure-model.md).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <regex>
#include <thread>

#include "master_client/master_client.h"
#include "pool.h"
#include "rpc/endpoint.h"

namespace kvpool::testing {
namespace {

const std::string kReader = KVPOOL_LEASE_READER;

// Puts `count` objects prefix/i of `size` bytes (version `version` of their FillObject bytes).
void PutObjects(Client& c, const std::string& prefix, int count, size_t size, uint32_t version = 0,
                bool upsert = false) {
  std::vector<uint8_t> buf(size * count);
  ASSERT_TRUE(c.RegisterBuffer(buf.data(), buf.size()).ok());
  std::vector<std::string> keys;
  std::vector<const void*> ptrs;
  std::vector<size_t> sizes;
  for (int i = 0; i < count; ++i) {
    keys.push_back(prefix + "/" + std::to_string(i));
    FillObject(keys.back(), version, buf.data() + i * size, size);
    ptrs.push_back(buf.data() + i * size);
    sizes.push_back(size);
  }
  auto st = upsert ? c.BatchUpsertFrom(keys, ptrs, sizes) : c.BatchPutFrom(keys, ptrs, sizes);
  for (int i = 0; i < count; ++i) EXPECT_TRUE(st[i].ok()) << keys[i] << ": " << st[i].ToString();
  ASSERT_TRUE(c.UnregisterBuffer(buf.data()).ok());
}

// Polls `c`'s stat until `leases_held` is `want` (within `timeout`).
bool WaitForLeases(Client& c, uint64_t want, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    auto s = c.Stat();
    if (s.ok() && s->leases_held == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(LeaseTest, AGetsLeaseEndsWithTheGet) {
  // A 60 s lease: only the release can end it within this test.
  Pool pool({"--default_kv_lease_ttl", "60000"});
  pool.AddNode("16MB");
  auto writer = pool.NewClient();
  auto reader = pool.NewClient();
  ASSERT_TRUE(writer && reader);
  PutObjects(*writer, "g", 4, 4096);
  std::vector<uint8_t> out(4096);
  ASSERT_TRUE(reader->RegisterBuffer(out.data(), out.size()).ok());
  ASSERT_EQ(*reader->GetInto("g/0", out.data(), out.size()), 4096u);
  EXPECT_EQ(out, ObjectBytes("g/0", 0, 4096));
  // The reader's next request carries the release: its own remove is not refused.
  EXPECT_TRUE(reader->Remove("g/0").ok());
  // Another client's remove sees the lease gone once the background flush sent it.
  ASSERT_EQ(*reader->GetInto("g/1", out.data(), out.size()), 4096u);
  EXPECT_TRUE(WaitForLeases(*writer, 0, std::chrono::seconds(2)));
  EXPECT_TRUE(writer->Remove("g/1").ok());
  // Closing releases at once too.
  ASSERT_EQ(*reader->GetInto("g/2", out.data(), out.size()), 4096u);
  ASSERT_TRUE(reader->Close().ok());
  EXPECT_TRUE(writer->Remove("g/2").ok());
}

// Issue 32: a get of more keys than one master request carries (8,192) is asked in chunks, and
// every chunk's lease ends with the get: another client removes all 10,000 keys at once after
// it, none refused as leased (before the fix, the leases past the first chunk waited for their
// TTL).
TEST(LeaseTest, AGetOfTenThousandKeysReleasesEveryLeaseAtOnce) {
  Pool pool({"--default_kv_lease_ttl", "60000"});
  pool.AddNode("64MB");
  auto writer = pool.NewClient();
  auto reader = pool.NewClient();
  ASSERT_TRUE(writer && reader);
  constexpr int kKeys = 10000;
  constexpr size_t kSize = 256;
  PutObjects(*writer, "many", kKeys, kSize);
  std::vector<uint8_t> out(kKeys * kSize);
  ASSERT_TRUE(reader->RegisterBuffer(out.data(), out.size()).ok());
  std::vector<std::string> keys;
  std::vector<void*> ptrs;
  std::vector<size_t> sizes;
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back("many/" + std::to_string(i));
    ptrs.push_back(out.data() + i * kSize);
    sizes.push_back(kSize);
  }
  auto got = reader->BatchGetInto(keys, ptrs, sizes);
  int exact = 0;
  for (int i = 0; i < kKeys; ++i) {
    exact += got[i].ok() && std::memcmp(out.data() + i * kSize,
                                        ObjectBytes(keys[i], 0, kSize).data(), kSize) == 0;
  }
  EXPECT_EQ(exact, kKeys);
  EXPECT_TRUE(WaitForLeases(*writer, 0, std::chrono::seconds(2))) << "leases still held";
  auto removed = writer->BatchRemove(keys);
  int refused = 0;
  for (const Status& st : removed) refused += st.code() == ErrorCode::OBJECT_HAS_LEASE;
  EXPECT_EQ(refused, 0) << "keys still leased after the get returned";
  EXPECT_EQ(std::count_if(removed.begin(), removed.end(), [](const Status& s) { return s.ok(); }),
            kKeys);
}

// A reader's own upsert or remove right after its get is never refused by that get's lease,
// wherever the release travels: on the upsert itself, or in the background flusher's
// LEASE_RELEASE when the upsert comes a moment later (the pauses sweep the flusher's 2 ms delay,
// so some upserts leave while that release is still on its way).
TEST(LeaseTest, AReadersOwnUpsertAfterItsGetIsNeverRefusedByThatGet) {
  Pool pool({"--default_kv_lease_ttl", "60000"});
  pool.AddNode("32MB");
  auto c = pool.NewClient();
  ASSERT_TRUE(c);
  constexpr size_t kSize = 64 << 10;
  PutObjects(*c, "u", 1, kSize);
  std::vector<uint8_t> out(kSize);
  ASSERT_TRUE(c->RegisterBuffer(out.data(), out.size()).ok());
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(*c->GetInto("u/0", out.data(), out.size()), kSize);
    std::this_thread::sleep_for(std::chrono::microseconds(1500 + (i * 37) % 2000));
    Status st =
        (i % 4 == 3) ? c->Remove("u/0") : c->BatchUpsertFrom({"u/0"}, {out.data()}, {kSize})[0];
    if (!st.ok()) {
      ++refused;
      ADD_FAILURE() << "round " << i << ": " << st.ToString();
    }
    if (i % 4 == 3) {
      ASSERT_TRUE(c->PutFrom("u/0", out.data(), kSize).ok());
    }
  }
  EXPECT_EQ(refused, 0);
}

// `kvpool get K F && kvpool rm K`: the reader exited, so nothing holds K.
TEST(LeaseTest, CliGetThenRmSucceeds) {
  Pool pool;  // default flags: a 10 s lease TTL
  pool.AddNode("16MB");
  const std::string m = pool.master_address();
  const std::string in = "/tmp/kvpool-lease-in-" + std::to_string(getpid());
  const std::string out = in + ".out";
  std::ofstream(in, std::ios::binary) << std::string(100000, 'q');
  auto r = RunCommand(kBinary, {"put", "page", in, "--master", m});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(kBinary, {"get", "page", out, "--master", m});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(kBinary, {"rm", "page", "--master", m});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(kBinary, {"stat", "--master", m});
  EXPECT_NE(r.output.find("leases: 0 held"), std::string::npos) << r.output;
  unlink(in.c_str());
  unlink(out.c_str());
}

// A reader mid-transfer (lease taken, not released) keeps the object from removal and upsert
// for as long as it lives, past --client_ttl; killed with -9, its leases are gone once the master
// declares it dead (--client_ttl 2), long before their TTL (60 s).
TEST(LeaseTest, AKilledReadersLeasesEndWithItsLiveness) {
  Pool pool({"--client_ttl", "2", "--default_kv_lease_ttl", "60000"});
  pool.AddNode("16MB");
  auto c = pool.NewClient();
  ASSERT_NE(c, nullptr);
  PutObjects(*c, "k", 2, 1000);
  auto holder = std::make_unique<Process>(
      kReader, std::vector<std::string>{"hold", pool.master_address(), "k", "2"}, "lease_reader");
  ASSERT_TRUE(holder->WaitForLog("HELD", std::chrono::seconds(10))) << holder->Log();
  EXPECT_EQ(c->Remove("k/0").code(), ErrorCode::OBJECT_HAS_LEASE);
  std::vector<uint8_t> buf(1000);
  ASSERT_TRUE(c->RegisterBuffer(buf.data(), buf.size()).ok());
  FillObject("k/1", 1, buf.data(), buf.size());
  EXPECT_EQ(c->BatchUpsertFrom({"k/1"}, {buf.data()}, {1000})[0].code(),
            ErrorCode::OBJECT_REPLICA_BUSY);
  auto s = c->Stat();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->leases_held, 1u);
  EXPECT_EQ(s->bytes_leased, 2000u);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // alive: still held
  EXPECT_EQ(c->Remove("k/0").code(), ErrorCode::OBJECT_HAS_LEASE);
  const auto killed = std::chrono::steady_clock::now();
  holder.reset();  // SIGKILL
  ASSERT_TRUE(WaitForLeases(*c, 0, std::chrono::seconds(6)));
  EXPECT_LT(std::chrono::steady_clock::now() - killed, std::chrono::seconds(6));
  EXPECT_TRUE(c->Remove("k/0").ok());
  EXPECT_TRUE(c->BatchUpsertFrom({"k/1"}, {buf.data()}, {1000})[0].ok());
}

// A reader stopped (SIGSTOP) mid-read well past its lease bound (TTL 300 ms, client TTL 1 s)
// while a writer fills the pool, evicting what the reader was reading and reusing the space:
// once resumed, its gets fail (LEASE_EXPIRED, or the keys are gone) and never return the bytes
// of another object.
TEST(LeaseTest, AStoppedReaderNeverGetsAnotherObjectsBytes) {
  Pool pool({"--default_kv_lease_ttl", "300", "--client_ttl", "1", "--eviction_ratio", "0"});
  pool.AddNode("48MB");
  auto w = pool.NewClient();
  ASSERT_NE(w, nullptr);
  PutObjects(*w, "r", 16, 1 << 20);  // 16 MiB the reader reads in one batch, over and over
  Process reader(kReader, {"read", pool.master_address(), "r", "16", std::to_string(1 << 20), "6"},
                 "lease_reader");
  ASSERT_TRUE(reader.WaitForLog("ROUND 2", std::chrono::seconds(20))) << reader.Log();
  reader.Pause();
  const auto stopped = std::chrono::steady_clock::now();
  // 96 MiB of fresh objects through a 48 MB pool: everything unleased is evicted, the
  // reader's objects too once its lease bound has passed.
  for (int round = 0; round < 6; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    PutObjects(*w, "fill" + std::to_string(round), 16, 1 << 20);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2000) -
                              (std::chrono::steady_clock::now() - stopped));
  reader.Resume();
  EXPECT_EQ(reader.Wait(std::chrono::seconds(30)), 0) << reader.Log();
  std::smatch m;
  const std::string log = reader.Log();
  ASSERT_TRUE(std::regex_search(
      log, m, std::regex(R"(RESULT ok=(\d+) expired=(\d+) failed=(\d+) wrong=(\d+))")))
      << log;
  EXPECT_EQ(m[4], "0") << log;
  EXPECT_GT(std::stol(m[1]), 0) << log;                    // it read before it was stopped
  EXPECT_GT(std::stol(m[2]) + std::stol(m[3]), 0) << log;  // and failed after
}

// An upsert of an object a reader is reading: the reader gets the old bytes or the new ones
// whole (or an error), never a mix; the upsert goes through between reads.
TEST(LeaseTest, UpsertUnderAReaderNeverShowsAMix) {
  Pool pool({"--eviction_ratio", "0"});
  pool.AddNode("32MB");
  auto w = pool.NewClient();
  auto r = pool.NewClient();
  ASSERT_TRUE(w && r);
  constexpr int kKeys = 8;
  constexpr size_t kSize = 256 << 10;
  constexpr uint32_t kVersions = 6;
  PutObjects(*w, "u", kKeys, kSize, 0);
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0}, wrong{0};
  std::thread reader([&] {
    std::vector<uint8_t> buf(kSize * kKeys);
    ASSERT_TRUE(r->RegisterBuffer(buf.data(), buf.size()).ok());
    std::vector<std::string> keys;
    std::vector<void*> ptrs;
    std::vector<size_t> sizes;
    std::vector<std::vector<std::vector<uint8_t>>> versions(kKeys);
    for (int i = 0; i < kKeys; ++i) {
      keys.push_back("u/" + std::to_string(i));
      ptrs.push_back(buf.data() + i * kSize);
      sizes.push_back(kSize);
      for (uint32_t v = 0; v < kVersions; ++v)
        versions[i].push_back(ObjectBytes(keys[i], v, kSize));
    }
    while (!stop.load()) {
      auto got = r->BatchGetInto(keys, ptrs, sizes);
      for (int i = 0; i < kKeys; ++i) {
        if (!got[i].ok()) continue;
        ++reads;
        bool whole = false;
        for (const auto& v : versions[i]) {
          whole = whole || std::memcmp(v.data(), buf.data() + i * kSize, kSize) == 0;
        }
        if (!whole) ++wrong;
      }
      // A reader re-reading the same keys back to back holds them all the time (each get's
      // release rides on the next get, which leases them again): leave the writer gaps.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  // The upserts start once the reader reads, and go on for 1.5 s (versions cycle).
  const auto begin = std::chrono::steady_clock::now();
  while (reads.load() == 0 && std::chrono::steady_clock::now() - begin < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  int upserts = 0;
  for (uint32_t n = 1; std::chrono::steady_clock::now() < end; ++n) {
    const uint32_t v = n % kVersions;
    std::vector<uint8_t> buf(kSize * kKeys);
    ASSERT_TRUE(w->RegisterBuffer(buf.data(), buf.size()).ok());
    std::vector<std::string> keys;
    std::vector<const void*> ptrs;
    std::vector<size_t> sizes;
    for (int i = 0; i < kKeys; ++i) {
      keys.push_back("u/" + std::to_string(i));
      FillObject(keys.back(), v, buf.data() + i * kSize, kSize);
      ptrs.push_back(buf.data() + i * kSize);
      sizes.push_back(kSize);
    }
    // Each key is retried while a read holds it (OBJECT_REPLICA_BUSY), for at most 2 s.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    std::vector<bool> done(kKeys, false);
    while (std::chrono::steady_clock::now() < until &&
           std::count(done.begin(), done.end(), false) > 0) {
      for (int i = 0; i < kKeys; ++i) {
        if (done[i]) continue;
        Status st = w->BatchUpsertFrom({keys[i]}, {ptrs[i]}, {kSize})[0];
        if (st.ok()) {
          done[i] = true;
          ++upserts;
        } else {
          EXPECT_EQ(st.code(), ErrorCode::OBJECT_REPLICA_BUSY) << st.ToString();
        }
      }
    }
    ASSERT_TRUE(w->UnregisterBuffer(buf.data()).ok());
  }
  stop.store(true);
  reader.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(reads.load(), 0);
  // Leases end with each read, so the upserts get through between reads.
  EXPECT_GT(upserts, kKeys * 2) << "upserts=" << upserts;
}

// A write-then-read engine on a full pool (issue 11's target, shortened to 4 s): fresh 256 KiB
// pages into a 256 MB node, each followed by a read of the last 64. Reads hold their pages only
// while they move, so puts keep succeeding by evicting the oldest pages.
TEST(LeaseTest, AFullPoolKeepsTakingWritesWhileServingRecentReads) {
  Pool pool;  // default master flags
  pool.AddNode("256MB");
  auto r = RunCommand(
      kReader, {"recent", pool.master_address(), std::to_string(256 << 10), "64", "1024", "4"},
      std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.output, m,
      std::regex(R"(pages=(\d+) refused=(\d+) puts_after_fill=(\d+) refused_after_fill=(\d+) )"
                 R"(other_put_errors=(\d+) reads=(\d+) exact=(\d+) missing=(\d+) wrong=(\d+))")))
      << r.output;
  const double after_fill = std::stod(m[3]), refused = std::stod(m[4]);
  const double reads = std::stod(m[6]), exact = std::stod(m[7]);
  EXPECT_EQ(m[9], "0") << r.output;
  EXPECT_EQ(m[5], "0") << r.output;
  if (after_fill > 0) {
    EXPECT_LE(refused / after_fill, 0.01) << r.output;
  }
  EXPECT_GE(exact / reads, 0.99) << r.output;
}

// group_ids of the wrong length or with an empty id: INVALID_PARAMS, nothing written.
TEST(LeaseTest, BadGroupIdsWriteNothing) {
  Pool pool;
  pool.AddNode("16MB");
  auto c = pool.NewClient();
  ASSERT_NE(c, nullptr);
  std::vector<uint8_t> buf(2000, 7);
  ASSERT_TRUE(c->RegisterBuffer(buf.data(), buf.size()).ok());
  ReplicateConfig wrong_length;
  wrong_length.group_ids = {"page1"};
  ReplicateConfig empty_id;
  empty_id.group_ids = {"page1", ""};
  for (const ReplicateConfig& cfg : {wrong_length, empty_id}) {
    auto st = c->BatchPutFrom({"a", "b"}, {buf.data(), buf.data() + 1000}, {1000, 1000}, cfg);
    for (const Status& s : st) EXPECT_EQ(s.code(), ErrorCode::INVALID_PARAMS) << s.ToString();
    EXPECT_FALSE(*c->IsExist("a"));
    EXPECT_FALSE(*c->IsExist("b"));
  }
  ReplicateConfig good;
  good.group_ids = {"page1", "page1"};
  auto st = c->BatchPutFrom({"a", "b"}, {buf.data(), buf.data() + 1000}, {1000, 1000}, good);
  EXPECT_TRUE(st[0].ok() && st[1].ok());
}

}  // namespace
}  // namespace kvpool::testing
