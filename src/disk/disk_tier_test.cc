#include "disk/disk_tier.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/checksum.h"
#include "disk/uring_queue.h"

namespace kvpool::disk {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// A fresh directory under /tmp (a disk file system here; tmpfs would exercise the fallback).
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/kvpool-disk-test-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<uint8_t> Bytes(uint64_t size, uint32_t seed) {
  std::vector<uint8_t> v(size);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::unique_ptr<DiskTier> MustOpen(const std::string& dir, uint64_t size = 8 * kMiB) {
  auto t = DiskTier::Open(DiskTierOptions{dir, size, 8});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

// Writes one object; returns its offset (or UINT64_MAX with a test failure).
Result<DiskObject> WriteOne(DiskTier& t, const std::string& key, const std::vector<uint8_t>& b) {
  AlignedBuffer buf(b.size(), t.alignment());
  memcpy(buf.data(), b.data(), b.size());
  DiskTier::WriteItem item{key, buf.data(), b.size(), ChecksumOf(b.data(), b.size())};
  return std::move(t.Write(std::span(&item, 1))[0]);
}

Result<std::vector<uint8_t>> ReadOne(DiskTier& t, const DiskObject& o) {
  AlignedBuffer buf(o.size, t.alignment());
  DiskTier::ReadOp op{o.offset, o.size, buf.data()};
  Status st = t.Read(std::span(&op, 1));
  if (!st.ok()) return st;
  return std::vector<uint8_t>(buf.data(), buf.data() + o.size);
}

TEST(DiskTierTest, WritesAndReadsBackExactBytes) {
  TempDir dir;
  auto t = MustOpen(dir.path());
  ASSERT_TRUE(t);
  std::vector<DiskObject> objs;
  for (uint32_t i = 0; i < 5; ++i) {
    auto o = WriteOne(*t, "k" + std::to_string(i), Bytes(100 * kKiB + i * 777, i));
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    EXPECT_EQ(o->offset % t->alignment(), 0u);
    objs.push_back(*o);
  }
  for (uint32_t i = 0; i < 5; ++i) {
    auto got = ReadOne(*t, objs[i]);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, Bytes(100 * kKiB + i * 777, i));
  }
  DiskTierStats s = t->stats();
  EXPECT_EQ(s.objects, 5u);
  EXPECT_EQ(s.writes, 5u);
  EXPECT_EQ(s.reads, 5u);
  EXPECT_TRUE(s.direct_io) << "/tmp is expected to take O_DIRECT on this machine";
  // The same key twice is refused; a read of a range that is not an object is refused.
  EXPECT_EQ(WriteOne(*t, "k0", Bytes(10, 1)).code(), ErrorCode::INVALID_PARAMS);
  DiskObject bogus = objs[0];
  bogus.size -= 1;
  EXPECT_EQ(ReadOne(*t, bogus).code(), ErrorCode::INVALID_READ);
}

// A read that never completes (an empty pipe stands in for a hung disk) ends at its deadline
// with FILE_READ_FAIL instead of holding its thread for good, and the ring serves on.
TEST(UringQueueTest, HungReadIsCancelledAtItsDeadline) {
  auto q = UringQueue::Create(4);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::vector<uint8_t> buf(4096);
  IoOp op{false, 0, buf.data(), buf.size()};
  auto start = std::chrono::steady_clock::now();
  auto run = std::async(std::launch::async, [&] {
    return (*q)->Run(p[0], std::span(&op, 1), "pipe",
                     DeadlineAfter(std::chrono::milliseconds(200)));
  });
  if (run.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ASSERT_EQ(::write(p[1], buf.data(), buf.size()), 4096);  // frees the stuck thread
    run.wait();
    FAIL() << "Run() waited past its deadline for I/O that never completed";
  }
  Status st = run.get();
  EXPECT_EQ(st.code(), ErrorCode::FILE_READ_FAIL);
  EXPECT_NE(st.message().find("not done after"), std::string::npos) << st.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  // Not wedged: the cancelled read ended, so the next batch runs.
  std::vector<uint8_t> sent = Bytes(4096, 7);
  ASSERT_EQ(::write(p[1], sent.data(), sent.size()), 4096);
  st = (*q)->Run(p[0], std::span(&op, 1), "pipe", DeadlineAfter(std::chrono::seconds(5)));
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(buf, sent);
  ::close(p[0]);
  ::close(p[1]);
}

TEST(DiskTierTest, ReopenReadoptsListedObjectsAndNotFreedOnes) {
  TempDir dir;
  std::vector<DiskObject> objs;
  {
    auto t = MustOpen(dir.path());
    ASSERT_TRUE(t);
    for (uint32_t i = 0; i < 6; ++i) {
      auto o = WriteOne(*t, "k" + std::to_string(i), Bytes(256 * kKiB, i));
      ASSERT_TRUE(o.ok());
      objs.push_back(*o);
    }
    EXPECT_TRUE(t->Free(objs[2].offset));
    EXPECT_FALSE(t->Free(objs[2].offset));
  }
  auto t = MustOpen(dir.path());
  ASSERT_TRUE(t);
  std::vector<DiskObject> listed = t->Objects();
  ASSERT_EQ(listed.size(), 5u);
  for (const DiskObject& o : listed) {
    EXPECT_NE(o.key, "k2");
    uint32_t i = static_cast<uint32_t>(std::stoi(o.key.substr(1)));
    EXPECT_EQ(o.offset, objs[i].offset);
    auto got = ReadOne(*t, o);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, Bytes(256 * kKiB, i));
  }
  // The space is allocated exactly as before: a new object does not overlap a listed one.
  auto o = WriteOne(*t, "new", Bytes(256 * kKiB, 99));
  ASSERT_TRUE(o.ok());
  for (const DiskObject& l : listed) EXPECT_NE(o->offset, l.offset);
  EXPECT_EQ(*ReadOne(*t, listed[0]), Bytes(256 * kKiB, std::stoi(listed[0].key.substr(1))));
}

TEST(DiskTierTest, TornIndexTailIsDroppedAndIntactRecordsKept) {
  TempDir dir;
  {
    auto t = MustOpen(dir.path());
    ASSERT_TRUE(t);
    ASSERT_TRUE(WriteOne(*t, "a", Bytes(5000, 1)).ok());
    ASSERT_TRUE(WriteOne(*t, "b", Bytes(5000, 2)).ok());
  }
  // A crash mid-append: half of a third record.
  std::string rec = EncodeRecord(LogRecord{LogRecord::kAdd, "c", 1 << 20, 5000, 12345});
  int fd = ::open((dir.path() + "/kvpool-disk.index").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, rec.data(), rec.size() / 2), static_cast<ssize_t>(rec.size() / 2));
  ::close(fd);
  auto t = MustOpen(dir.path());
  ASSERT_TRUE(t);
  auto listed = t->Objects();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].key, "a");
  EXPECT_EQ(listed[1].key, "b");
}

TEST(DiskTierTest, FlippedIndexRecordIsNotTrusted) {
  std::string log = EncodeRecord(LogRecord{LogRecord::kAdd, "x", 0, 10, 7}) +
                    EncodeRecord(LogRecord{LogRecord::kAdd, "y", 4096, 10, 8});
  size_t valid = 0;
  EXPECT_EQ(DecodeRecords(log, &valid).size(), 2u);
  EXPECT_EQ(valid, log.size());
  log[log.size() - 12] ^= 0x10;  // inside the second record
  auto recs = DecodeRecords(log, &valid);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].key, "x");
  EXPECT_LT(valid, log.size());
}

TEST(DiskTierTest, BitFlipInDataFileIsChecksumMismatchNeverWrongBytes) {
  TempDir dir;
  DiskObject o;
  {
    auto t = MustOpen(dir.path());
    ASSERT_TRUE(t);
    auto w = WriteOne(*t, "flip", Bytes(64 * kKiB, 5));
    ASSERT_TRUE(w.ok());
    o = *w;
  }
  int fd = ::open((dir.path() + "/kvpool-disk.data").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t b = 0;
  off_t at = static_cast<off_t>(o.offset + 1234);
  ASSERT_EQ(::pread(fd, &b, 1, at), 1);
  b ^= 0x04;
  ASSERT_EQ(::pwrite(fd, &b, 1, at), 1);
  ::fsync(fd);
  ::close(fd);
  auto t = MustOpen(dir.path());
  ASSERT_TRUE(t);
  ASSERT_EQ(t->Objects().size(), 1u);
  EXPECT_EQ(ReadOne(*t, o).code(), ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_EQ(t->stats().checksum_failures, 1u);
}

// Flips one bit of the data file at `at`.
void FlipBit(const std::string& dir, uint64_t at) {
  int fd = ::open((dir + "/kvpool-disk.data").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(at)), 1);
  b ^= 0x10;
  ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(at)), 1);
  ::fsync(fd);
  ::close(fd);
}

TEST(DiskTierTest, OneCorruptObjectFailsAloneInABatchRead) {
  TempDir dir;
  constexpr int kObjects = 40;
  std::vector<DiskObject> objs;
  {
    auto t = MustOpen(dir.path(), 16 * kMiB);
    ASSERT_TRUE(t);
    for (int i = 0; i < kObjects; ++i) {
      auto w = WriteOne(*t, "p" + std::to_string(i), Bytes(256 * kKiB, 100 + i));
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      objs.push_back(*w);
    }
  }
  FlipBit(dir.path(), objs[7].offset + 4321);
  FlipBit(dir.path(), objs[30].offset + 9);
  auto t = MustOpen(dir.path(), 16 * kMiB);
  ASSERT_TRUE(t);
  std::vector<AlignedBuffer> bufs;
  std::vector<DiskTier::ReadOp> ops;
  for (const DiskObject& o : objs) {
    bufs.emplace_back(o.size, t->alignment());
    ops.push_back(DiskTier::ReadOp{o.offset, o.size, bufs.back().data()});
  }
  // One op names no listed object: it fails alone too.
  AlignedBuffer stray(4096, t->alignment());
  ops.push_back(DiskTier::ReadOp{objs[3].offset, 4096, stray.data()});
  std::vector<Status> got = t->ReadSeparately(ops);
  ASSERT_EQ(got.size(), ops.size());
  for (int i = 0; i < kObjects; ++i) {
    if (i == 7 || i == 30) {
      EXPECT_EQ(got[i].code(), ErrorCode::CHECKSUM_MISMATCH) << i;
      EXPECT_NE(got[i].message().find("key=p" + std::to_string(i)), std::string::npos);
      continue;
    }
    ASSERT_TRUE(got[i].ok()) << i << ": " << got[i].ToString();
    EXPECT_EQ(std::vector<uint8_t>(bufs[i].data(), bufs[i].data() + objs[i].size),
              Bytes(256 * kKiB, 100 + i))
        << i;
  }
  EXPECT_EQ(got[kObjects].code(), ErrorCode::INVALID_READ);
  EXPECT_EQ(t->stats().checksum_failures, 2u);
  EXPECT_EQ(t->stats().reads, static_cast<uint64_t>(kObjects - 2));
  // Read still answers the batch's first failure, and ReadEach reports every op once.
  EXPECT_FALSE(t->Read(ops).ok());
  std::vector<int> calls(ops.size(), 0);
  Status first = t->ReadEach(ops, nullptr, [&](size_t i, const Status&) { ++calls[i]; });
  EXPECT_FALSE(first.ok());
  EXPECT_EQ(calls, std::vector<int>(ops.size(), 1));
}

// Issue 33: a changed size keeps every object that still fits (the log says how many it kept
// and dropped); a changed alignment drops all. Before, a size change logged "dropped" and
// adopted them anyway.
TEST(DiskTierTest, SizeChangeKeepsWhatFitsAlignmentChangeDropsAll) {
  TempDir dir;
  std::vector<DiskObject> objs;
  {
    auto t = MustOpen(dir.path(), 8 * kMiB);
    ASSERT_TRUE(t);
    for (int i = 0; i < 6; ++i) {  // 6 x 1 MiB: offsets 0 .. 5 MiB
      auto w = WriteOne(*t, "s" + std::to_string(i), Bytes(kMiB, 200 + i));
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      objs.push_back(*w);
    }
  }
  {
    auto t = MustOpen(dir.path(), 3 * kMiB);  // shrunk: objects at 0, 1 and 2 MiB fit
    ASSERT_TRUE(t);
    std::vector<DiskObject> kept = t->Objects();
    ASSERT_EQ(kept.size(), 3u);
    for (const DiskObject& o : kept) {
      EXPECT_LT(o.offset + o.size, 3 * kMiB + 1);
      auto got = ReadOne(*t, o);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, Bytes(kMiB, 200 + std::stoi(o.key.substr(1))));
    }
  }
  {
    auto t = MustOpen(dir.path(), 16 * kMiB);  // grown: the three kept stay
    ASSERT_TRUE(t);
    EXPECT_EQ(t->Objects().size(), 3u);
  }
  {
    auto t = DiskTier::Open(DiskTierOptions{dir.path(), 16 * kMiB, 8, 8192});
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_TRUE((*t)->Objects().empty());  // another alignment: dropped
  }
  {
    auto t = MustOpen(dir.path(), 16 * kMiB);  // nor do they come back with the old one
    ASSERT_TRUE(t);
    EXPECT_TRUE(t->Objects().empty());
  }
}

TEST(DiskTierTest, FullTierRefusesThenLruVictimsMakeRoom) {
  TempDir dir;
  auto t = MustOpen(dir.path(), 1 * kMiB);
  ASSERT_TRUE(t);
  std::vector<DiskObject> objs;
  for (uint32_t i = 0; i < 4; ++i) {
    auto o = WriteOne(*t, "k" + std::to_string(i), Bytes(256 * kKiB, i));
    ASSERT_TRUE(o.ok());
    objs.push_back(*o);
  }
  EXPECT_EQ(WriteOne(*t, "k4", Bytes(256 * kKiB, 4)).code(), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(t->stats().no_space, 1u);
  ASSERT_TRUE(ReadOne(*t, objs[0]).ok());  // k0 becomes the most recently used
  auto victims = t->LruVictims(2);
  ASSERT_EQ(victims.size(), 2u);
  EXPECT_EQ(victims[0].key, "k1");
  EXPECT_EQ(victims[1].key, "k2");
  std::vector<uint64_t> offs{victims[0].offset};
  EXPECT_EQ(t->Free(offs), 1u);
  auto o = WriteOne(*t, "k4", Bytes(256 * kKiB, 4));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(*ReadOne(*t, *o), Bytes(256 * kKiB, 4));
  EXPECT_EQ(*ReadOne(*t, objs[0]), Bytes(256 * kKiB, 0));
}

TEST(DiskTierTest, BadPathsAndSizesAreClearErrors) {
  TempDir dir;
  auto missing = DiskTier::Open(DiskTierOptions{dir.path() + "/nope", 4 * kMiB});
  EXPECT_EQ(missing.code(), ErrorCode::FILE_NOT_FOUND);
  EXPECT_NE(missing.status().message().find(dir.path() + "/nope"), std::string::npos);
  std::string file = dir.path() + "/afile";
  ::close(::open(file.c_str(), O_CREAT | O_WRONLY, 0644));
  EXPECT_EQ(DiskTier::Open(DiskTierOptions{file, 4 * kMiB}).code(), ErrorCode::FILE_OPEN_FAIL);
  auto huge = DiskTier::Open(DiskTierOptions{dir.path(), uint64_t{1} << 60});
  EXPECT_EQ(huge.code(), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_NE(huge.status().message().find("--disk_size"), std::string::npos);
  EXPECT_EQ(DiskTier::Open(DiskTierOptions{dir.path(), 1000}).code(), ErrorCode::INVALID_PARAMS);
  auto first = MustOpen(dir.path());
  ASSERT_TRUE(first);
  DiskTierOptions again{dir.path(), 8 * kMiB};
  again.lock_wait = std::chrono::milliseconds(50);
  auto second = DiskTier::Open(again);
  EXPECT_EQ(second.code(), ErrorCode::FILE_OPEN_FAIL);
  EXPECT_NE(second.status().message().find("in use"), std::string::npos);
}

// The lock of an owner that lets go within lock_wait (as a node killed mid-I/O does once the
// kernel has drained its rings) is taken, not reported as in use.
TEST(DiskTierTest, OpenWaitsForALockReleasedWithinLockWait) {
  TempDir dir;
  auto first = MustOpen(dir.path());
  ASSERT_TRUE(first);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    first.reset();
  });
  DiskTierOptions o{dir.path(), 8 * kMiB};
  o.lock_wait = std::chrono::milliseconds(10000);
  auto second = DiskTier::Open(o);
  release.join();
  EXPECT_TRUE(second.ok()) << second.status().ToString();
}

// tmpfs takes O_DIRECT on recent kernels (6.6+) and refuses it on older ones: either way the
// tier works, falling back to buffered I/O where refused.
TEST(DiskTierTest, TmpfsWorksWithOrWithoutODirect) {
  if (!std::filesystem::exists("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  std::string tmpl = "/dev/shm/kvpool-disk-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) GTEST_SKIP() << "cannot create a dir in /dev/shm";
  {
    auto t = MustOpen(tmpl, 2 * kMiB);
    ASSERT_TRUE(t);
    auto o = WriteOne(*t, "k", Bytes(3000, 3));
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(*ReadOne(*t, *o), Bytes(3000, 3));
  }
  std::filesystem::remove_all(tmpl);
}

TEST(DiskTierTest, BufferedIoWhenODirectIsOff) {
  TempDir dir;
  auto t = DiskTier::Open(DiskTierOptions{dir.path(), 2 * kMiB, 4, 4096, /*direct_io=*/false});
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE((*t)->stats().direct_io);
  auto o = WriteOne(**t, "k", Bytes(3000, 3));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(*ReadOne(**t, *o), Bytes(3000, 3));
}

}  // namespace
}  // namespace kvpool::disk
