// The disk tier across real processes: a node with 128 MB of DRAM and a 1 GB disk tier keeps
// 800 MB of 256 KiB pages readable (most from disk), keeps them across kill -9 and restart,
// refuses bad disk paths at start, and never serves a flipped bit (docs/operations.md, "Disk
// tier"; docs/failure-model.md).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "kvpool/host_allocator.h"
#include "master_client/master_client.h"
#include "pool.h"

namespace kvpool::testing {
namespace {

using std::chrono::milliseconds;

constexpr size_t kPage = 256 << 10;
constexpr int kBatch = 128;

// A fresh directory on /tmp (ext4 here: O_DIRECT applies; tmpfs would fall back to buffered).
class DiskDir {
 public:
  DiskDir() {
    std::string tmpl = "/tmp/kvpool-disk-it-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~DiskDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string PageKey(int i) { return "page-" + std::to_string(i); }

// Puts pages [first, last) in batches of `batch`; returns how many puts succeeded.
int PutPages(Client& c, int first, int last, int batch = kBatch) {
  int ok = 0;
  for (int b = first; b < last; b += batch) {
    std::vector<std::string> keys;
    std::vector<std::vector<uint8_t>> values;
    std::vector<std::span<const uint8_t>> spans;
    for (int i = b; i < std::min(last, b + batch); ++i) {
      keys.push_back(PageKey(i));
      values.push_back(ObjectBytes(keys.back(), 1, kPage));
    }
    for (const auto& v : values) spans.emplace_back(v);
    for (const Status& st : c.BatchPut(keys, spans, ReplicateConfig{})) ok += st.ok() ? 1 : 0;
  }
  return ok;
}

struct Counts {
  int exact = 0, failed = 0, wrong = 0;
};

Counts GetPages(Client& c, int first, int last) {
  Counts n;
  for (int b = first; b < last; b += kBatch) {
    std::vector<std::string> keys;
    for (int i = b; i < std::min(last, b + kBatch); ++i) keys.push_back(PageKey(i));
    auto got = c.BatchGet(keys);
    for (size_t k = 0; k < keys.size(); ++k) {
      if (!got[k].ok()) {
        ++n.failed;
      } else if (*got[k] == ObjectBytes(keys[k], 1, kPage)) {
        ++n.exact;
      } else {
        ++n.wrong;
      }
    }
  }
  return n;
}

// Waits (up to `timeout`) until the master lists at least `n` disk replicas; returns the count.
uint64_t WaitForDiskReplicas(Client& c, uint64_t n, milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  uint64_t have = 0;
  while (std::chrono::steady_clock::now() < until) {
    auto s = c.Stat();
    if (s.ok()) have = s->disk_replicas;
    if (have >= n) break;
    std::this_thread::sleep_for(milliseconds(5));  // fine enough to time the puts below
  }
  return have;
}

// Runs fio in `dir` (1 MiB O_DIRECT io_uring I/O at queue depth 32, the node's) with `args`
// added; returns the bandwidth in MB/s of what it read, or else of what it wrote (0 when fio
// failed).
double FioMBs(const std::string& dir, std::vector<std::string> args) {
  // --directory before the job's options: after --filename, fio put the file in the cwd.
  args.insert(args.begin(), "--directory=" + dir);
  args.insert(args.end(), {"--bs=1M", "--direct=1", "--ioengine=io_uring", "--iodepth=32",
                           "--output-format=terse", "--terse-version=3"});
  auto fio = RunCommand("/usr/bin/fio", args, std::chrono::seconds(60));
  if (fio.exit_code != 0) return 0;
  std::vector<std::string> f;
  size_t start = 0;
  for (size_t i = 0; i <= fio.output.size(); ++i) {
    if (i == fio.output.size() || fio.output[i] == ';') {
      f.push_back(fio.output.substr(start, i - start));
      start = i + 1;
    }
  }
  // terse v3, 1-based: field 7 is the read bandwidth in KiB/s, field 48 the write bandwidth.
  double read = f.size() > 6 ? std::stod(f[6]) : 0;
  double write = f.size() > 47 ? std::stod(f[47]) : 0;
  return (read > 0 ? read : write) * 1024 / 1e6;
}

ClientOptions Quick() {
  ClientOptions o;
  o.rpc_timeout = milliseconds(3000);
  o.transfer_timeout = milliseconds(10000);
  return o;
}

// A pool of one node with `dram` of DRAM over a `disk` disk tier in a fresh directory, and a
// client of it (null if it could not be set up).
struct DiskPool {
  DiskPool(const std::string& dram, const std::string& disk, std::vector<std::string> flags = {},
           ClientOptions options = Quick())
      : pool({"--client_ttl", "30"}) {
    flags.insert(flags.begin(), {"--disk_path", dir.path(), "--disk_size", disk});
    pool.AddNode(dram, flags);
    client = pool.NewClient(std::move(options));
  }
  // A standalone engine attached to the node.
  Result<std::unique_ptr<Client>> AttachEngine() {
    StandaloneOptions so;
    so.server_address = pool.node_segment(0);
    so.rpc_timeout = milliseconds(3000);
    so.transfer_timeout = milliseconds(10000);
    return Client::SetupStandalone(so);
  }
  DiskDir dir;  // outlives the pool
  Pool pool;
  std::unique_ptr<Client> client;
};

// 40 pages (10 MB) into a node with 16 MB of DRAM, copied to disk, then 80 more: the first
// pages are on disk only.
void PutFirstPagesOnDiskOnly(Client& c) {
  ASSERT_EQ(PutPages(c, 0, 40, 16), 40);
  ASSERT_GE(WaitForDiskReplicas(c, 40, milliseconds(10000)), 40u);
  ASSERT_EQ(PutPages(c, 40, 120, 16), 80);
  WaitForDiskReplicas(c, 120, milliseconds(10000));
}

TEST(DiskTierTest, NodeWith128MbDramKeeps800MbReadableAndAcrossKill9) {
  DiskPool p("128MB", "1GB");
  ASSERT_NE(p.client, nullptr);
  Client& c = *p.client;
  constexpr int kPages = 3200;  // 800 MB
  auto t0 = std::chrono::steady_clock::now();
  // Unpaced: once DRAM is full of objects not yet on disk, puts wait for the offloader
  // (MasterOptions::disk_offload_wait) instead of evicting what would be lost. Until round 10
  // this test paused every 100 MB: unpaced, a busy machine lost 50 of 3200.
  ASSERT_EQ(PutPages(c, 0, kPages), kPages);
  double put_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WaitForDiskReplicas(c, kPages * 99 / 100, milliseconds(20000));
  auto stat = c.Stat();
  ASSERT_TRUE(stat.ok());
  EXPECT_LE(stat->used, stat->capacity);
  EXPECT_GT(stat->disk_capacity, 0u);
  t0 = std::chrono::steady_clock::now();
  Counts before = GetPages(c, 0, kPages);
  double get_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("put %.0f MB/s, get %.0f MB/s (disk replicas %llu)\n", kPages * 0.25 / put_s,
              kPages * 0.25 / get_s, static_cast<unsigned long long>(stat->disk_replicas));
  EXPECT_EQ(before.wrong, 0);
  EXPECT_GE(before.exact, kPages * 99 / 100) << "failed=" << before.failed;

  // kill -9 and restart: the disk objects are listed again and read back exact.
  Process& restarted = p.pool.RestartNode(0);
  ASSERT_TRUE(restarted.WaitForLog("mounted disk segment=", milliseconds(20000)))
      << restarted.Log();
  uint64_t relisted = WaitForDiskReplicas(c, before.exact * 99 / 100, milliseconds(20000));
  EXPECT_GE(relisted, static_cast<uint64_t>(before.exact) * 99 / 100);
  Counts after = GetPages(c, 0, kPages);
  std::printf("exact before restart %d/%d, after kill -9 and restart %d/%d (relisted %llu)\n",
              before.exact, kPages, after.exact, kPages, static_cast<unsigned long long>(relisted));
  EXPECT_EQ(after.wrong, 0);
  EXPECT_GE(after.exact, before.exact * 99 / 100) << "failed=" << after.failed;
}

TEST(DiskTierTest, FlippedBitOnDiskIsNeverServed) {
  DiskPool p("16MB", "64MB");
  ASSERT_NE(p.client, nullptr);
  Client& c = *p.client;
  ASSERT_NO_FATAL_FAILURE(PutFirstPagesOnDiskOnly(c));
  // Flip one bit in every page-sized slot of the data file's first 4 MB.
  int fd = ::open((p.dir.path() + "/kvpool-disk.data").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  for (off_t at = 1000; at < (4 << 20); at += kPage) {
    uint8_t b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, at), 1);
    b ^= 0x20;
    ASSERT_EQ(::pwrite(fd, &b, 1, at), 1);
  }
  ::fsync(fd);
  ::close(fd);
  Counts n = GetPages(c, 0, 120);
  EXPECT_EQ(n.wrong, 0);
  EXPECT_GT(n.failed, 0) << "the flipped pages must fail (CHECKSUM_MISMATCH), not read back";
  EXPECT_GT(n.exact, 0);
}

// Flips one bit in the page-sized slot `slot` of the data file in `dir`.
void FlipSlot(const std::string& dir, int slot) {
  int fd = ::open((dir + "/kvpool-disk.data").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const off_t at = static_cast<off_t>(slot) * static_cast<off_t>(kPage) + 777;
  uint8_t b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, at), 1);
  b ^= 0x08;
  ASSERT_EQ(::pwrite(fd, &b, 1, at), 1);
  ::fsync(fd);
  ::close(fd);
}

// Reads pages [0, n) in one batch; counts, and the keys that failed with CHECKSUM_MISMATCH.
Counts GetBatchCounting(Client& c, int n, int* mismatches) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back(PageKey(i));
  auto got = c.BatchGet(keys);
  Counts out;
  *mismatches = 0;
  for (int i = 0; i < n; ++i) {
    if (!got[i].ok()) {
      ++out.failed;
      *mismatches += got[i].status().code() == ErrorCode::CHECKSUM_MISMATCH ? 1 : 0;
    } else if (*got[i] == ObjectBytes(keys[i], 1, kPage)) {
      ++out.exact;
    } else {
      ++out.wrong;
    }
  }
  return out;
}

// Issue 33: 40 pages on disk only (kill -9 and restart emptied DRAM), read in one batch. A
// flipped bit fails its own page alone (CHECKSUM_MISMATCH); every other page of the batch reads
// exact, over TCP from a client and through the node from a standalone engine. Before, the
// disk read's first mismatch failed every key of the READ.
TEST(DiskTierTest, CorruptPagesFailAloneInABatchOfDiskOnlyPages) {
  DiskPool p("32MB", "64MB", {"--disk_promote_after", "0"});  // every read reads the disk
  ASSERT_NE(p.client, nullptr);
  Client& c = *p.client;
  ASSERT_EQ(PutPages(c, 0, 40, 40), 40);
  ASSERT_GE(WaitForDiskReplicas(c, 40, milliseconds(10000)), 40u);
  Process& restarted = p.pool.RestartNode(0);  // SIGKILL: DRAM is gone, the disk stays
  ASSERT_TRUE(restarted.WaitForLog("mounted disk segment=", milliseconds(20000)))
      << restarted.Log();
  ASSERT_GE(WaitForDiskReplicas(c, 40, milliseconds(10000)), 40u);

  ASSERT_NO_FATAL_FAILURE(FlipSlot(p.dir.path(), 3));
  int mismatches = 0;
  Counts one = GetBatchCounting(c, 40, &mismatches);
  EXPECT_EQ(one.wrong, 0);
  EXPECT_EQ(one.exact, 39) << "failed=" << one.failed;
  EXPECT_EQ(mismatches, 1);

  // Ten more flipped (11 of 40): the 29 intact pages still read exact.
  for (int slot : {5, 9, 12, 17, 21, 25, 28, 31, 34, 38}) {
    ASSERT_NO_FATAL_FAILURE(FlipSlot(p.dir.path(), slot));
  }
  Counts eleven = GetBatchCounting(c, 40, &mismatches);
  EXPECT_EQ(eleven.wrong, 0);
  EXPECT_EQ(eleven.exact, 29) << "failed=" << eleven.failed;

  // The same from a standalone engine, read through its node (another path to the disk). The
  // node may have unlisted pages that failed twice by now: they are misses, never wrong bytes.
  ASSERT_NO_FATAL_FAILURE(FlipSlot(p.dir.path(), 0));
  auto local = p.AttachEngine();
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  Counts engine = GetBatchCounting(**local, 40, &mismatches);
  EXPECT_EQ(engine.wrong, 0);
  EXPECT_EQ(engine.exact, 28) << "failed=" << engine.failed;
}

// The disk fails under the node: its data file is cut to nothing (every disk read now ends
// early, an I/O error). Reads of disk-only objects fail, never with wrong bytes; the error is
// logged once with the path and counted; the node keeps serving DRAM and new puts; and the
// unreadable objects are unlisted, so they turn into misses instead of failing on every read.
TEST(DiskTierTest, IoErrorsMidRunFailOnlyThoseReadsAndLeaveTheNodeServing) {
  DiskPool p("16MB", "64MB");
  ASSERT_NE(p.client, nullptr);
  Client& c = *p.client;
  ASSERT_NO_FATAL_FAILURE(PutFirstPagesOnDiskOnly(c));
  ASSERT_EQ(::truncate((p.dir.path() + "/kvpool-disk.data").c_str(), 0), 0);
  Counts cold = GetPages(c, 0, 40);
  EXPECT_EQ(cold.wrong, 0);
  EXPECT_GT(cold.failed, 0);
  Counts again = GetPages(c, 0, 40);  // a second round: the same errors, still no wrong bytes
  EXPECT_EQ(again.wrong, 0);
  // Logged once, naming the path; counted.
  const std::string log = p.pool.node(0).Log();
  size_t logged = 0;
  for (size_t at = log.find("further disk I/O errors are counted"); at != std::string::npos;
       at = log.find("further disk I/O errors are counted", at + 1)) {
    ++logged;
  }
  EXPECT_EQ(logged, 1u) << log;
  EXPECT_NE(log.find("disk tier " + p.dir.path()), std::string::npos) << log;
  // The node still serves: the pages in DRAM, and new puts.
  Counts warm = GetPages(c, 110, 120);
  EXPECT_EQ(warm.exact, 10) << "failed=" << warm.failed;
  ASSERT_EQ(PutPages(c, 200, 210), 10);
  EXPECT_EQ(GetPages(c, 200, 210).exact, 10);
  // The unreadable objects are unlisted: a miss, as if evicted.
  int gone = 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    gone = 0;
    for (int i = 0; i < 40; ++i) {
      auto e = c.IsExist(PageKey(i));
      gone += e.ok() && !*e ? 1 : 0;
    }
    if (gone >= cold.failed) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_GE(gone, cold.failed);
}

// The tiers of `key`'s replicas in the master's order (DRAM first), without taking a lease.
std::vector<uint32_t> TiersOf(master::MasterClient& probe, const std::string& key) {
  const std::vector<std::string> keys = {key};
  auto where = probe.GetReplicaList(keys, /*no_lease=*/true, DeadlineAfter(milliseconds(3000)));
  std::vector<uint32_t> tiers;
  if (!where.ok() || where->objects(0).code() != 0) return tiers;
  for (const rpc::Replica& r : where->objects(0).replicas()) tiers.push_back(r.tier());
  return tiers;
}

// The node's default --disk_promote_after 2: the first read of a disk-only object leaves it
// there, the second copies it back into DRAM in the background; readers then get the DRAM copy
// (exact bytes throughout) and the disk copy stays.
TEST(DiskTierTest, SecondReadFromDiskPromotesTheObjectBackToDram) {
  DiskPool p("16MB", "64MB");
  ASSERT_NE(p.client, nullptr);
  Client& c = *p.client;
  ASSERT_NO_FATAL_FAILURE(PutFirstPagesOnDiskOnly(c));
  // Past the master's --eviction_min_age_ms (2 s): a promotion evicts only objects older than
  // that from DRAM (they stay on disk), never what an engine has just written.
  std::this_thread::sleep_for(milliseconds(2500));
  master::MasterClient probe(*rpc::ParseEndpoint(p.pool.master_address()), "probe");
  std::vector<int> cold;
  for (int i = 0; i < 40 && cold.size() < 4; ++i) {
    if (TiersOf(probe, PageKey(i)) == std::vector<uint32_t>{rpc::TIER_DISK}) cold.push_back(i);
  }
  ASSERT_EQ(cold.size(), 4u);
  auto read_cold = [&] {
    for (int i : cold) {
      Counts n = GetPages(c, i, i + 1);
      EXPECT_EQ(n.exact, 1) << PageKey(i) << " failed=" << n.failed << " wrong=" << n.wrong;
    }
  };
  read_cold();
  std::this_thread::sleep_for(milliseconds(500));
  for (int i : cold) {
    EXPECT_EQ(TiersOf(probe, PageKey(i)), std::vector<uint32_t>{rpc::TIER_DISK}) << PageKey(i);
  }
  read_cold();  // the second read from disk
  const std::vector<uint32_t> both = {rpc::TIER_DRAM, rpc::TIER_DISK};
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  size_t promoted = 0;
  while (std::chrono::steady_clock::now() < until && promoted < cold.size()) {
    promoted = 0;
    for (int i : cold) promoted += TiersOf(probe, PageKey(i)) == both ? 1 : 0;
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(promoted, cold.size());
  read_cold();  // from DRAM now
}

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

// kill -9 while the offloader is writing: after the restart nothing half-written is served
// (every object read back is exact; those whose copy had not become durable are missing).
TEST(DiskTierTest, Kill9DuringOffloadServesNoHalfWrittenObject) {
  // 100 MB into 32 MB of DRAM: past the first 32 MB each batch of puts waits for the offloader
  // (up to rpc_timeout); 3 s was too short once on a loaded CI machine (one batch refused).
  ClientOptions patient = Quick();
  patient.rpc_timeout = milliseconds(20000);
  DiskPool p("32MB", "256MB", {}, patient);
  ASSERT_NE(p.client, nullptr);
  Client& c = *p.client;
  ASSERT_EQ(PutPages(c, 0, 400, 64), 400);     // the offloader is busy when we kill
  Process& restarted = p.pool.RestartNode(0);  // SIGKILL, then start again
  ASSERT_TRUE(restarted.WaitForLog("mounted disk segment=", milliseconds(20000)))
      << restarted.Log();
  Counts n = GetPages(c, 0, 400);
  std::printf("after kill -9 mid-offload: %d exact, %d missing, %d wrong\n", n.exact, n.failed,
              n.wrong);
  EXPECT_EQ(n.wrong, 0);
  EXPECT_GT(n.exact, 0);
}

// A standalone client attached to the node reads objects that are only on the node's disk.
TEST(DiskTierTest, StandaloneClientReadsDiskObjectsThroughItsNode) {
  DiskPool p("16MB", "64MB");
  ASSERT_NE(p.client, nullptr);
  Client& c = *p.client;
  // 25 MB into 16 MB of DRAM, in two steps: once the first 10 MB are on disk, eviction takes
  // those first, so a loaded machine's slower offloader loses nothing (unpaced, 36 of 100 pages
  // were evicted before their copy once, in a parallel CTest run).
  ASSERT_EQ(PutPages(c, 0, 40, 16), 40);
  ASSERT_GE(WaitForDiskReplicas(c, 40, milliseconds(10000)), 40u);
  ASSERT_EQ(PutPages(c, 40, 100, 16), 60);
  ASSERT_GE(WaitForDiskReplicas(c, 100, milliseconds(20000)), 100u);
  auto local = p.AttachEngine();
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  Counts n = GetPages(**local, 0, 100);
  EXPECT_EQ(n.wrong, 0);
  EXPECT_EQ(n.exact, 100) << "failed=" << n.failed;
  auto e = (*local)->BatchIsExist({PageKey(0), PageKey(1)});
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].ok() && *e[0], true);
  // Its stat shows the disk tier as the embedded client's does.
  auto embedded = c.Stat();
  auto standalone = (*local)->Stat();
  ASSERT_TRUE(embedded.ok() && standalone.ok());
  EXPECT_EQ(standalone->disk_capacity, embedded->disk_capacity);
  EXPECT_GT(standalone->disk_capacity, 0u);
  EXPECT_GE(standalone->disk_replicas, 100u);
  ASSERT_EQ(standalone->segments.size(), embedded->segments.size());
  size_t disk_segments = 0;
  for (const auto& seg : standalone->segments) disk_segments += seg.tier == 1 ? 1 : 0;
  EXPECT_EQ(disk_segments, 1u);
}

TEST(DiskTierTest, BadDiskPathOrSizeFailsTheStartNamingIt) {
  DiskDir dir;
  Pool pool;
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"node",
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     std::to_string(FreePort()),
                                     "--master_server_address",
                                     pool.master_address(),
                                     "--global_segment_size",
                                     "16MB",
                                     "--enable_http_admin",
                                     "false"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCommand(kBinary, args, std::chrono::seconds(20));
  };
  auto missing = run({"--disk_path", dir.path() + "/nope", "--disk_size", "64MB"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find(dir.path() + "/nope"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("does not exist"), std::string::npos) << missing.output;
  // The failed start's cause is the only error: no drain of a segment never mounted (issue 33).
  EXPECT_EQ(missing.output.find("drain request failed"), std::string::npos) << missing.output;
  auto huge = run({"--disk_path", dir.path(), "--disk_size", "100000TB"});
  EXPECT_EQ(huge.exit_code, 1);
  EXPECT_NE(huge.output.find("--disk_size"), std::string::npos) << huge.output;
  EXPECT_EQ(huge.output.find("drain request failed"), std::string::npos) << huge.output;
  // Refused for lack of space: no data file left behind.
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/kvpool-disk.data")) << huge.output;
  auto half = run({"--disk_path", dir.path()});
  EXPECT_EQ(half.exit_code, 2);  // a usage error, as every bad flag
  EXPECT_NE(half.output.find("give both"), std::string::npos) << half.output;
}

}  // namespace
}  // namespace kvpool::testing
