// The disk tier's speed against fio on the same file system in the same run: reads of disk-only
// objects, and puts into a DRAM tier that is full so every object goes to disk
// (docs/benchmarks.md, "Disk tier"). They assert exact bytes; the figures are printed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "disk_tier_util.h"
#include "kvpool/host_allocator.h"
#include "master_client/master_client.h"
#include "pool.h"

namespace kvpool::testing {
namespace {

using namespace disk_tier;  // NOLINT(google-build-using-namespace): the tests' own helpers

// Reads of 128 x 1 MiB batches served from disk, against fio's random 1 MiB O_DIRECT reads at
// the node's queue depth on the same file system in the same run (docs/benchmarks.md, "Disk
// tier"). Prints both; asserts exact bytes only (the figure depends on the machine's load).
TEST(DiskTierTest, DiskReadThroughputAgainstFio) {
  DiskPool p("16MB", "512MB", {"--disk_promote_after", "0"});  // every round reads the disk
  ASSERT_NE(p.client, nullptr);
  Client& c = *p.client;
  constexpr size_t kMiB = 1 << 20;
  constexpr int kObjects = 256;
  auto key = [](int i) { return "mib-" + std::to_string(i); };
  for (int b = 0; b < kObjects; b += 8) {
    std::vector<std::string> keys;
    std::vector<std::vector<uint8_t>> values;
    std::vector<std::span<const uint8_t>> spans;
    for (int i = b; i < b + 8; ++i) {
      keys.push_back(key(i));
      values.push_back(ObjectBytes(keys.back(), 1, kMiB));
    }
    for (const auto& v : values) spans.emplace_back(v);
    for (const Status& st : c.BatchPut(keys, spans, ReplicateConfig{})) ASSERT_TRUE(st.ok());
    // 16 MB of DRAM holds two batches: let the offload catch up (this test measures reads).
    WaitForDiskReplicas(c, static_cast<uint64_t>(b + 8), milliseconds(5000));
  }
  ASSERT_GE(WaitForDiskReplicas(c, kObjects, milliseconds(20000)), static_cast<uint64_t>(kObjects));
  // Round 0 checks every byte and is not timed (making the expected bytes costs more CPU than
  // the read); rounds 1-3 are timed. Nothing is promoted to DRAM, so every round reads the disk.
  // Buffers registered once, read into with BatchGetInto (the engines' zero-copy call).
  int wrong = 0;
  auto read_rounds = [&](Client& reader, uint8_t* dst) {
    uint64_t bytes = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int round = 0; round < 4; ++round) {
      if (round == 1) {
        t0 = std::chrono::steady_clock::now();
        bytes = 0;
      }
      for (int b = 16; b < kObjects; b += 128) {  // objects 16..: evicted from 16 MB of DRAM
        std::vector<std::string> keys;
        std::vector<void*> ptrs;
        std::vector<size_t> sizes;
        for (int i = b; i < std::min(kObjects, b + 128); ++i) {
          keys.push_back(key(i));
          ptrs.push_back(dst + (i - b) * kMiB);
          sizes.push_back(kMiB);
        }
        auto got = reader.BatchGetInto(keys, ptrs, sizes);
        for (size_t k = 0; k < keys.size(); ++k) {
          EXPECT_TRUE(got[k].ok()) << keys[k] << ": " << got[k].status().ToString();
          bytes += kMiB;
          if (round == 0 && std::memcmp(ptrs[k], ObjectBytes(keys[k], 1, kMiB).data(), kMiB) != 0) {
            ++wrong;
          }
        }
      }
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return static_cast<double>(bytes) / s / 1e6;
  };
  // An engine over TCP (no segment of its own), and a standalone engine attached to the node
  // reading into pages of kvpool's host allocator (the node's disk reads straight into them).
  std::vector<uint8_t> plain(128 * kMiB);
  ASSERT_TRUE(c.RegisterBuffer(plain.data(), plain.size()).ok());
  auto local = p.AttachEngine();
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  HostMemAllocator alloc;
  auto pages = alloc.Alloc(128 * kMiB);
  ASSERT_TRUE(pages.ok()) << pages.status().ToString();
  ASSERT_TRUE((*local)->RegisterBuffer(*pages, 128 * kMiB).ok());
  // fio before and after ours, on the same file system: the disk's speed drifts (shared
  // storage), and the mean of the two brackets what it gave us.
  auto fio = [&] {
    return FioMBs(p.dir.path(), {"--name=randread", "--filename=fio.dat", "--size=256M",
                                 "--rw=randread", "--runtime=2", "--time_based"});
  };
  double fio_before = fio();
  double tcp = read_rounds(c, plain.data());
  double standalone = read_rounds(**local, static_cast<uint8_t*>(*pages));
  double fio_mbs = (fio_before + fio()) / 2;
  EXPECT_EQ(wrong, 0);
  ASSERT_TRUE((*local)->UnregisterBuffer(*pages).ok());
  (void)(*local)->Close();
  (void)alloc.Free(*pages);
  std::printf(
      "disk-tier reads of 128 x 1 MiB batches: over TCP %.0f MB/s, standalone (into shared "
      "pages) %.0f MB/s; fio randread 1 MiB qd 32 (mean of before and after): %.0f MB/s; ratio "
      "TCP %.2f, standalone %.2f\n",
      tcp, standalone, fio_mbs, fio_mbs > 0 ? tcp / fio_mbs : 0.0,
      fio_mbs > 0 ? standalone / fio_mbs : 0.0);
}

// Puts of 128 x 1 MiB batches into a DRAM tier that is full, so every object put is offloaded
// and an older one evicted, against fio's sequential 1 MiB O_DIRECT writes (with a final
// fsync: our copies are durable too) on the same file system in the same run. Two rates of
// objects becoming durable on disk (listed there by the master): end to end, from the first
// put until the last object is listed, and sustained, while the DRAM tier is full of objects
// waiting for the disk (from the 512th timed object to the last put), which leaves out the
// first batch's transfer before the disk has work and the DRAM tier's drain after the last. Asserts
// exact bytes and that (almost) nothing was lost to eviction ahead of its copy; prints the figures
// (docs/benchmarks.md, "Disk tier").
// `standalone`: the puts come from an engine attached to the node (BatchPutFrom of pages from
// kvpool's host allocator: the node copies them into its segment, no socket); else from a client
// with no segment of its own, over TCP (BatchPutFrom of registered memory).
void PutsIntoFullDramAgainstFio(bool standalone) {
  DiskPool p("512MB", "3GB");
  ASSERT_NE(p.client, nullptr);
  Client& c = *p.client;
  constexpr size_t kMiB = 1 << 20;
  constexpr int kFill = 512, kTimed = 2048;  // 512 MB fill the DRAM tier; 2 GB timed
  constexpr int kSustainedFrom = kFill + 512;
  std::unique_ptr<Client> local;
  Client* putter = &c;
  if (standalone) {
    auto r = p.AttachEngine();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    local = std::move(r).value();
    putter = local.get();
  }
  // 128 distinct payloads made once (making bytes costs more CPU than putting them) in one
  // registered region; object i is payload i % 128 with i in its first 8 bytes, so every
  // object's bytes are its own.
  HostMemAllocator alloc;
  auto region = alloc.Alloc(kBatch * kMiB);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  uint8_t* payloads = static_cast<uint8_t*>(*region);
  for (int i = 0; i < kBatch; ++i) {
    std::vector<uint8_t> bytes = ObjectBytes("payload" + std::to_string(i), 1, kMiB);
    std::memcpy(payloads + i * kMiB, bytes.data(), kMiB);
  }
  ASSERT_TRUE(putter->RegisterBuffer(payloads, kBatch * kMiB).ok());
  auto key = [](int i) { return "full-" + std::to_string(i); };
  auto stamp = [&](int i) {
    uint8_t* v = payloads + (i % kBatch) * kMiB;
    uint64_t n = static_cast<uint64_t>(i);
    std::memcpy(v, &n, sizeof n);
    return std::span<const uint8_t>(v, kMiB);
  };
  auto put = [&](int first, int last) {
    int ok = 0;
    for (int b = first; b < last; b += kBatch) {
      std::vector<std::string> keys;
      std::vector<const void*> ptrs;
      std::vector<size_t> sizes;
      for (int i = b; i < std::min(last, b + kBatch); ++i) {
        keys.push_back(key(i));
        ptrs.push_back(stamp(i).data());
        sizes.push_back(kMiB);
      }
      for (const Status& st : putter->BatchPutFrom(keys, ptrs, sizes, ReplicateConfig{})) {
        ok += st.ok() ? 1 : 0;
      }
    }
    return ok;
  };
  ASSERT_EQ(put(0, kFill), kFill);
  ASSERT_GE(WaitForDiskReplicas(c, kFill, milliseconds(20000)), static_cast<uint64_t>(kFill));
  // fio right before and right after the timed puts, on the same file system: the disk's speed
  // drifts (shared storage), and the mean of the two brackets what the puts had.
  auto seq_write_fio = [&] {
    double mbs = FioMBs(p.dir.path(), {"--name=seqwrite", "--filename=fio.dat", "--size=2G",
                                       "--rw=write", "--end_fsync=1"});
    std::filesystem::remove(p.dir.path() + "/fio.dat");
    return mbs;
  };
  double fio_before = seq_write_fio();
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(put(kFill, kSustainedFrom), kSustainedFrom - kFill);
  auto t1 = std::chrono::steady_clock::now();
  auto disk_replicas = [&] {
    auto st = c.Stat();
    return st.ok() ? st->disk_replicas : 0;
  };
  uint64_t listed1 = disk_replicas();
  ASSERT_EQ(put(kSustainedFrom, kFill + kTimed), kFill + kTimed - kSustainedFrom);
  auto t2 = std::chrono::steady_clock::now();
  uint64_t listed2 = disk_replicas();
  uint64_t on_disk = WaitForDiskReplicas(c, kFill + kTimed, milliseconds(60000));
  auto t3 = std::chrono::steady_clock::now();
  auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  double ours = kTimed * static_cast<double>(kMiB) / seconds(t3 - t0) / 1e6;
  double sustained = static_cast<double>(listed2 - listed1) * kMiB / seconds(t2 - t1) / 1e6;
  // Every object read back (not timed): exact, or missing if evicted before its copy.
  int exact = 0, wrong = 0;
  for (int b = 0; b < kFill + kTimed; b += kBatch) {
    std::vector<std::string> keys;
    for (int i = b; i < b + kBatch; ++i) keys.push_back(key(i));
    auto got = c.BatchGet(keys);
    for (int k = 0; k < kBatch; ++k) {
      if (!got[k].ok()) continue;
      std::span<const uint8_t> want = stamp(b + k);
      if (got[k]->size() == want.size() && std::memcmp(got[k]->data(), want.data(), kMiB) == 0) {
        ++exact;
      } else {
        ++wrong;
      }
    }
  }
  double fio_mbs = (fio_before + seq_write_fio()) / 2;
  std::printf(
      "%s puts of 128 x 1 MiB into a full DRAM tier, durable on disk: sustained %.0f MB/s, end "
      "to "
      "end %.0f MB/s; fio seq write 1 MiB qd 32 (mean of before and after): %.0f MB/s; ratio "
      "sustained %.2f, end to end "
      "%.2f (on disk %llu, read back exact %d/%d); fio before %.0f MB/s\n",
      standalone ? "standalone" : "TCP", sustained, ours, fio_mbs,
      fio_mbs > 0 ? sustained / fio_mbs : 0.0, fio_mbs > 0 ? ours / fio_mbs : 0.0,
      static_cast<unsigned long long>(on_disk), exact, kFill + kTimed, fio_before);
  EXPECT_EQ(wrong, 0);
  EXPECT_GE(exact, (kFill + kTimed) * 99 / 100);
  ASSERT_TRUE(putter->UnregisterBuffer(payloads).ok());
  if (local != nullptr) (void)local->Close();
  (void)alloc.Free(payloads);
}

TEST(DiskTierTest, PutsIntoFullDramAgainstFio) { PutsIntoFullDramAgainstFio(false); }

TEST(DiskTierTest, StandalonePutsIntoFullDramAgainstFio) { PutsIntoFullDramAgainstFio(true); }

}  // namespace
}  // namespace kvpool::testing
