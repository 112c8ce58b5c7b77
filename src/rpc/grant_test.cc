// Data-plane grants (rpc/grant.h): a grant the master signs lets exactly its range of its
// segment be used in its mode until it expires (plus the clock-skew allowance); anything else
// is ILLEGAL_CLIENT naming the range.
#include "rpc/grant.h"

#include <gtest/gtest.h>

namespace kvpool::rpc {
namespace {

constexpr uint64_t kNow = 1'800'000'000'000;              // a fixed unix time in ms
constexpr uint64_t kIncarnation = 0x5eed'0000'0000'0001;  // the segment memory's
constexpr uint64_t kSkew = static_cast<uint64_t>(kGrantClockSkew.count());

class GrantTest : public ::testing::Test {
 protected:
  // A range [offset, offset + length) carrying a grant for [4096, 4096 + 8192) of seg-a.
  Range Granted(uint64_t offset, uint64_t length, GrantMode mode = GrantMode::kRead,
                uint64_t expiry = kNow + 60000) {
    Range r;
    r.set_offset(offset);
    r.set_length(length);
    key_.Sign("seg-a", kIncarnation, 4096, 8192, mode, expiry, r.mutable_grant());
    return r;
  }
  static void ExpectRefused(const Status& st, const std::string& why) {
    EXPECT_EQ(st.code(), ErrorCode::ILLEGAL_CLIENT) << st.ToString();
    EXPECT_NE(st.message().find(why), std::string::npos) << st.ToString();
  }

  GrantKey key_{"pool secret"};
};

TEST_F(GrantTest, ValidGrantCoversItsRangeAndSubranges) {
  EXPECT_TRUE(key_.Check("seg-a", kIncarnation, Granted(4096, 8192), GrantMode::kRead, kNow).ok());
  EXPECT_TRUE(
      key_.Check("seg-a", kIncarnation, Granted(4096 + 100, 500), GrantMode::kRead, kNow).ok());
  EXPECT_TRUE(
      key_.Check("seg-a", kIncarnation, Granted(4096 + 8192, 0), GrantMode::kRead, kNow).ok());
  Range w = Granted(4096, 8192, GrantMode::kWrite);
  EXPECT_TRUE(key_.Check("seg-a", kIncarnation, w, GrantMode::kWrite, kNow).ok());
  EXPECT_EQ(w.grant().mac().size(), kHmacBytes);
}

TEST_F(GrantTest, MissingGrantIsRefusedNamingTheRange) {
  Range r;
  r.set_offset(4096);
  r.set_length(10);
  Status st = key_.Check("seg-a", kIncarnation, r, GrantMode::kRead, kNow);
  ExpectRefused(st, "no grant");
  EXPECT_NE(st.message().find("segment=seg-a offset=4096 length=10"), std::string::npos);
}

TEST_F(GrantTest, WrongMacIsRefused) {
  Range r = Granted(4096, 8192);
  std::string mac = r.grant().mac();
  mac[0] ^= 1;
  r.mutable_grant()->set_mac(mac);
  ExpectRefused(key_.Check("seg-a", kIncarnation, r, GrantMode::kRead, kNow), "MAC");
  r.mutable_grant()->set_mac("short");
  ExpectRefused(key_.Check("seg-a", kIncarnation, r, GrantMode::kRead, kNow), "MAC");
  // Signed with another secret.
  GrantKey other("another secret");
  Range forged = Granted(4096, 8192);
  other.Sign("seg-a", kIncarnation, 4096, 8192, GrantMode::kRead, kNow + 60000,
             forged.mutable_grant());
  ExpectRefused(key_.Check("seg-a", kIncarnation, forged, GrantMode::kRead, kNow), "MAC");
}

TEST_F(GrantTest, EditedGrantFieldsBreakTheMac) {
  // A client that widens its grant, moves it, extends it or flips its mode is caught.
  Range r = Granted(4096, 8192);
  r.mutable_grant()->set_length(1 << 20);
  ExpectRefused(key_.Check("seg-a", kIncarnation, r, GrantMode::kRead, kNow), "MAC");
  r = Granted(0, 100);
  r.mutable_grant()->set_offset(0);
  ExpectRefused(key_.Check("seg-a", kIncarnation, r, GrantMode::kRead, kNow), "MAC");
  r = Granted(4096, 8192);
  r.mutable_grant()->set_expiry_ms(kNow + 3'600'000);
  ExpectRefused(key_.Check("seg-a", kIncarnation, r, GrantMode::kRead, kNow), "MAC");
  r = Granted(4096, 8192);
  r.mutable_grant()->set_mode(static_cast<uint32_t>(GrantMode::kWrite));
  ExpectRefused(key_.Check("seg-a", kIncarnation, r, GrantMode::kWrite, kNow), "MAC");
}

TEST_F(GrantTest, ExpiredGrantIsRefusedAfterTheSkewAllowance) {
  Range r = Granted(4096, 8192, GrantMode::kRead, kNow);
  EXPECT_TRUE(key_.Check("seg-a", kIncarnation, r, GrantMode::kRead, kNow).ok());
  EXPECT_TRUE(key_.Check("seg-a", kIncarnation, r, GrantMode::kRead, kNow + kSkew).ok());
  ExpectRefused(key_.Check("seg-a", kIncarnation, r, GrantMode::kRead, kNow + kSkew + 1),
                "expired");
}

TEST_F(GrantTest, RangeOutsideTheGrantIsRefused) {
  ExpectRefused(key_.Check("seg-a", kIncarnation, Granted(4095, 10), GrantMode::kRead, kNow),
                "outside");
  ExpectRefused(key_.Check("seg-a", kIncarnation, Granted(4096, 8193), GrantMode::kRead, kNow),
                "outside");
  ExpectRefused(key_.Check("seg-a", kIncarnation, Granted(4096 + 8192, 1), GrantMode::kRead, kNow),
                "outside");
  ExpectRefused(key_.Check("seg-a", kIncarnation, Granted(~0ull - 4, 16), GrantMode::kRead, kNow),
                "outside");
  ExpectRefused(key_.Check("seg-a", kIncarnation, Granted(8192, ~0ull), GrantMode::kRead, kNow),
                "outside");
}

TEST_F(GrantTest, WrongModeIsRefused) {
  ExpectRefused(key_.Check("seg-a", kIncarnation, Granted(4096, 10, GrantMode::kRead),
                           GrantMode::kWrite, kNow),
                "mode");
  ExpectRefused(key_.Check("seg-a", kIncarnation, Granted(4096, 10, GrantMode::kWrite),
                           GrantMode::kRead, kNow),
                "mode");
}

TEST_F(GrantTest, WrongSegmentIsRefused) {
  ExpectRefused(key_.Check("seg-b", kIncarnation, Granted(4096, 10), GrantMode::kRead, kNow),
                "MAC");
  // The length prefix keeps "seg-a" + offset bytes from colliding with a longer name.
  ExpectRefused(key_.Check(std::string_view("seg-a\0", 6), kIncarnation, Granted(4096, 10),
                           GrantMode::kRead, kNow),
                "MAC");
}

TEST_F(GrantTest, GrantIsBoundToTheSegmentMemoryItWasIssuedFor) {
  // A host restarted under the same name serves new memory: an old grant is worthless there.
  ExpectRefused(key_.Check("seg-a", kIncarnation + 1, Granted(4096, 10), GrantMode::kRead, kNow),
                "MAC");
  DataRequest req;
  req.set_segment_name("seg-a");
  req.set_segment_incarnation(kIncarnation + 1);
  *req.add_ranges() = Granted(4096, 100);
  ExpectRefused(key_.CheckRequest(req, GrantMode::kRead, kNow), "MAC");
}

TEST_F(GrantTest, HostWithoutSecretRefusesEverything) {
  GrantKey none("");
  EXPECT_TRUE(none.empty());
  ExpectRefused(none.Check("seg-a", kIncarnation, Granted(4096, 10), GrantMode::kRead, kNow),
                "no pool secret");
}

TEST_F(GrantTest, RequestNeedsEveryRangeGranted) {
  DataRequest req;
  req.set_segment_name("seg-a");
  req.set_segment_incarnation(kIncarnation);
  *req.add_ranges() = Granted(4096, 100);
  *req.add_ranges() = Granted(5000, 100);
  EXPECT_TRUE(key_.CheckRequest(req, GrantMode::kRead, kNow).ok());
  Range bare;
  bare.set_offset(0);
  bare.set_length(100);
  *req.add_ranges() = bare;
  Status st = key_.CheckRequest(req, GrantMode::kRead, kNow);
  ExpectRefused(st, "offset=0 length=100");
}

}  // namespace
}  // namespace kvpool::rpc
