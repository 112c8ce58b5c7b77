// DiskHost::Read: the READ ranges come from the wire and are checked before they size anything.
#include "hosting/disk_host.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/checksum.h"

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
  rpc::Reply ReadRanges(std::vector<std::pair<uint64_t, uint64_t>> ranges) {
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

}  // namespace
}  // namespace kvpool::hosting
