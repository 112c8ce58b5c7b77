// DiskHost::Read: the READ ranges come from the wire and are checked before they size anything.
#include "hosting/disk_host.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "transfer/tier_transport.h"

namespace kvpool::hosting {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kObj = 512 << 10;

class DiskHostReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = "/tmp/kvpool-disk-host-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    DiskHostOptions o;
    o.tier.dir = dir_;
    o.tier.size = kMiB;
    auto h = DiskHost::Open(o);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    host_ = std::move(h).value();
    host_->Bind("dram", &dram_);
    // One listed object of kObj bytes.
    disk::AlignedBuffer buf(kObj, host_->tier().alignment());
    for (uint64_t i = 0; i < kObj; ++i) buf.data()[i] = static_cast<uint8_t>(i * 7);
    disk::DiskTier::WriteItem item{"k", buf.data(), kObj, ChecksumOf(buf.data(), kObj)};
    auto w = host_->tier().Write(std::span(&item, 1));
    ASSERT_TRUE(w[0].ok()) << w[0].status().ToString();
    obj_ = *w[0];
    bytes_.assign(buf.data(), buf.data() + kObj);
  }
  void TearDown() override {
    host_.reset();
    std::filesystem::remove_all(dir_);
  }
  rpc::Reply ReadRanges(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
    rpc::DataRequest req;
    req.set_segment_name("dram#disk");
    for (auto [offset, length] : ranges) {
      rpc::Range* r = req.add_ranges();
      r->set_offset(offset);
      r->set_length(length);
    }
    std::optional<rpc::Reply> r = host_->Read(req);
    EXPECT_TRUE(r.has_value());
    return r ? std::move(*r) : rpc::Reply::Error(Status(ErrorCode::INTERNAL_ERROR, "none"));
  }

  // XORs the byte at `offset` of the tier's data file with `mask`, durably.
  bool FlipOnDisk(uint64_t offset, uint8_t mask) const {
    int fd = ::open((dir_ + "/kvpool-disk.data").c_str(), O_RDWR);
    if (fd < 0) return false;
    uint8_t b = 0;
    bool ok = ::pread(fd, &b, 1, static_cast<off_t>(offset)) == 1;
    b ^= mask;
    ok = ok && ::pwrite(fd, &b, 1, static_cast<off_t>(offset)) == 1 && ::fsync(fd) == 0;
    ::close(fd);
    return ok;
  }
  // Two ranges, both the listed object.
  std::vector<rpc::Range> TheObjectTwice() const {
    std::vector<rpc::Range> ranges(2);
    for (auto& r : ranges) {
      r.set_offset(obj_.offset);
      r.set_length(kObj);
    }
    return ranges;
  }

  std::string dir_;
  transfer::SegmentTable dram_;
  std::unique_ptr<DiskHost> host_;
  disk::DiskObject obj_;
  std::vector<uint8_t> bytes_;
};

TEST_F(DiskHostReadTest, ListedObjectReadsBackExact) {
  rpc::Reply r = ReadRanges({{obj_.offset, kObj}, {obj_.offset, kObj}});
  ASSERT_EQ(r.code, ErrorCode::OK);
  ASSERT_EQ(r.payload.size(), 2u);
  for (const auto& b : r.payload) {
    ASSERT_EQ(b.size(), kObj);
    EXPECT_EQ(std::memcmp(b.data(), bytes_.data(), kObj), 0);
  }
}

// A length no object has is refused before a buffer of that size is asked for (it used to
// throw std::bad_alloc out of the data server's thread).
TEST_F(DiskHostReadTest, HugeLengthIsInvalidReadNotAnAllocation) {
  EXPECT_EQ(ReadRanges({{obj_.offset, uint64_t{1} << 62}}).code, ErrorCode::INVALID_READ);
  EXPECT_EQ(ReadRanges({{0, ~uint64_t{0}}}).code, ErrorCode::INVALID_READ);
  EXPECT_EQ(ReadRanges({{obj_.offset, kObj}, {kMiB * 4, kObj}}).code, ErrorCode::INVALID_READ);
}

// One listed object named again and again may not make a READ larger than the whole tier.
TEST_F(DiskHostReadTest, RepeatedRangesBeyondTheTiersSizeAreInvalidRead) {
  rpc::Reply r = ReadRanges({{obj_.offset, kObj}, {obj_.offset, kObj}, {obj_.offset, kObj}});
  EXPECT_EQ(r.code, ErrorCode::INVALID_READ);
}

// The transport a client uses for its own host's disk tier: the READ goes to the DiskHost
// directly, its streamed ranges land in the caller's memory, the trailer's verdict is the
// result.
TEST_F(DiskHostReadTest, TierTransportReadsStraightIntoTheCallersMemory) {
  transfer::TierTransport t(host_.get());
  const std::string name = "dram#disk";
  rpc::Endpoint none;
  std::vector<rpc::Range> ranges = TheObjectTwice();
  // Two ranges into three iovecs whose edges fall elsewhere than the ranges'.
  std::vector<uint8_t> out(2 * kObj, 0);
  std::vector<iovec> dst = {
      {out.data(), 1000}, {out.data() + 1000, kObj}, {out.data() + 1000 + kObj, kObj - 1000}};
  transfer::SegmentRanges src{&name, &none, ranges};
  ASSERT_TRUE(t.Read(src, dst, DeadlineAfter(std::chrono::seconds(5))).ok());
  EXPECT_EQ(std::memcmp(out.data(), bytes_.data(), kObj), 0);
  EXPECT_EQ(std::memcmp(out.data() + kObj, bytes_.data(), kObj), 0);
  EXPECT_EQ(host_->stats().direct_reads, 0u);  // unaligned edges: read into a buffer, copied

  iovec short_dst{out.data(), kObj};
  EXPECT_EQ(t.Read(src, std::span(&short_dst, 1), Deadline::max()).code(),
            ErrorCode::INVALID_PARAMS);
  const std::string other = "other#disk";
  transfer::SegmentRanges elsewhere{&other, &none, ranges};
  EXPECT_EQ(t.Read(elsewhere, dst, Deadline::max()).code(), ErrorCode::SEGMENT_NOT_FOUND);
  EXPECT_EQ(t.Write(src, dst, Deadline::max()).code(), ErrorCode::INVALID_WRITE);

  // A bit flipped on disk: CHECKSUM_MISMATCH naming the range, never the bytes as good.
  ASSERT_TRUE(FlipOnDisk(obj_.offset + 100, 0x10));
  Status st = t.Read(src, dst, DeadlineAfter(std::chrono::seconds(5)));
  EXPECT_EQ(st.code(), ErrorCode::CHECKSUM_MISMATCH) << st.ToString();
  EXPECT_NE(st.message().find("dram#disk"), std::string::npos) << st.ToString();
}

// Aligned destinations (a standalone engine's pages): the disk reads into them, no copy; the
// checksum is checked there, so a flipped bit is CHECKSUM_MISMATCH on this path too.
TEST_F(DiskHostReadTest, AlignedDestinationsAreReadIntoWithoutACopy) {
  transfer::TierTransport t(host_.get());
  const std::string name = "dram#disk";
  rpc::Endpoint none;
  std::vector<rpc::Range> ranges = TheObjectTwice();
  transfer::SegmentRanges src{&name, &none, ranges};
  disk::AlignedBuffer out(2 * kObj, host_->tier().alignment());
  std::memset(out.data(), 0, 2 * kObj);
  for (std::vector<iovec> dst :
       {std::vector<iovec>{{out.data(), 2 * kObj}},
        std::vector<iovec>{{out.data() + kObj, kObj}, {out.data(), kObj}}}) {
    const uint64_t before = host_->stats().direct_reads;
    ASSERT_TRUE(t.Read(src, dst, DeadlineAfter(std::chrono::seconds(5))).ok());
    EXPECT_EQ(host_->stats().direct_reads, before + 1);
    EXPECT_EQ(std::memcmp(out.data(), bytes_.data(), kObj), 0);
    EXPECT_EQ(std::memcmp(out.data() + kObj, bytes_.data(), kObj), 0);
    std::memset(out.data(), 0, 2 * kObj);
  }
  // A range that is no listed object is refused on this path as on the other.
  std::vector<rpc::Range> bad(1);
  bad[0].set_offset(obj_.offset + host_->tier().alignment());
  bad[0].set_length(kObj);
  iovec one{out.data(), kObj};
  EXPECT_EQ(t.Read(transfer::SegmentRanges{&name, &none, bad}, std::span(&one, 1), Deadline::max())
                .code(),
            ErrorCode::INVALID_READ);

  ASSERT_TRUE(FlipOnDisk(obj_.offset + 4096, 0x01));
  iovec whole{out.data(), 2 * kObj};
  Status st = t.Read(src, std::span(&whole, 1), DeadlineAfter(std::chrono::seconds(5)));
  EXPECT_EQ(st.code(), ErrorCode::CHECKSUM_MISMATCH) << st.ToString();
}

// Issue 33: a READ of two objects, one of them corrupt on disk, through the tier transport
// with each range's outcome asked for: the good range's bytes are kept exact and reported OK,
// the bad one alone is CHECKSUM_MISMATCH, on the streamed path and the direct one alike.
TEST_F(DiskHostReadTest, ACorruptObjectFailsItsRangeAloneOnBothPaths) {
  constexpr uint64_t kSmall = 64 << 10;
  disk::AlignedBuffer buf(kSmall, host_->tier().alignment());
  std::memset(buf.data(), 0x5a, kSmall);
  disk::DiskTier::WriteItem item{"k2", buf.data(), kSmall, ChecksumOf(buf.data(), kSmall)};
  auto w = host_->tier().Write(std::span(&item, 1));
  ASSERT_TRUE(w[0].ok()) << w[0].status().ToString();
  ASSERT_TRUE(FlipOnDisk(w[0]->offset + 10, 0x02));
  std::vector<rpc::Range> ranges(2);
  ranges[0].set_offset(obj_.offset);
  ranges[0].set_length(kObj);
  ranges[1].set_offset(w[0]->offset);
  ranges[1].set_length(kSmall);
  transfer::TierTransport t(host_.get());
  const std::string name = "dram#disk";
  rpc::Endpoint none;
  disk::AlignedBuffer out(kObj + kSmall + 4096, host_->tier().alignment());
  // Unaligned (streamed, copied) and aligned (read straight into `out`).
  for (uint64_t shift : {uint64_t{1}, uint64_t{0}}) {
    SCOPED_TRACE(shift);
    std::memset(out.data(), 0, out.size());
    iovec dst{out.data() + shift, kObj + kSmall};
    std::vector<Status> each;
    transfer::SegmentRanges src{&name, &none, ranges};
    src.range_status = &each;
    const uint64_t direct = host_->stats().direct_reads;
    Status st = t.Read(src, std::span(&dst, 1), DeadlineAfter(std::chrono::seconds(5)));
    EXPECT_EQ(st.code(), ErrorCode::CHECKSUM_MISMATCH) << st.ToString();
    EXPECT_EQ(host_->stats().direct_reads, direct + (shift == 0 ? 1 : 0));
    ASSERT_EQ(each.size(), 2u);
    EXPECT_TRUE(each[0].ok()) << each[0].ToString();
    EXPECT_EQ(std::memcmp(out.data() + shift, bytes_.data(), kObj), 0);
    EXPECT_EQ(each[1].code(), ErrorCode::CHECKSUM_MISMATCH) << each[1].ToString();
  }
}

}  // namespace
}  // namespace kvpool::hosting
