#include "hosting/streamed_read.h"

#include <gtest/gtest.h>

#include <thread>

namespace kvpool::hosting {
namespace {

using transfer::ReadTrailer;

std::shared_ptr<StreamedRead> ThreeRanges(Deadline give_up, bool range_codes = false) {
  auto buf = std::make_shared<disk::AlignedBuffer>(3 * 4096, 4096);
  std::vector<disk::DiskTier::ReadOp> ops;
  ops.reserve(3);
  for (int i = 0; i < 3; ++i) {
    ops.push_back({static_cast<uint64_t>(i) * 4096, 100, buf->data() + i * 4096});
  }
  return std::make_shared<StreamedRead>(buf, std::move(ops), give_up, range_codes);
}

ReadTrailer TrailerOf(StreamedRead& r) {
  asio::const_buffer t = r.Part(r.parts() - 1);
  EXPECT_EQ(t.size(), ReadTrailer::kBytes);
  return ReadTrailer::Decode(static_cast<const uint8_t*>(t.data()));
}

TEST(StreamedReadTest, RangesAreSentAsTheyLandAndTheTrailerLast) {
  auto r = ThreeRanges(DeadlineAfter(std::chrono::seconds(10)));
  EXPECT_EQ(r->parts(), 4u);
  EXPECT_EQ(r->bytes(), 300u + ReadTrailer::kBytes);
  EXPECT_EQ(r->Part(1).size(), 100u);
  r->Done(0, Status::Ok());
  EXPECT_EQ(r->WaitReady(0), 1u);  // range 1 is still out
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    r->Done(2, Status::Ok());
    r->Done(1, Status::Ok());
  });
  EXPECT_GE(r->WaitReady(1), 1u);  // blocks until range 1 lands
  late.join();
  EXPECT_EQ(r->WaitReady(1), 3u);  // ranges 1, 2 and the trailer
  EXPECT_EQ(TrailerOf(*r).code, ErrorCode::OK);
}

TEST(StreamedReadTest, TheTrailerNamesTheFirstFailedRange) {
  auto r = ThreeRanges(DeadlineAfter(std::chrono::seconds(10)));
  r->Done(0, Status::Ok());
  r->Done(1, Status(ErrorCode::CHECKSUM_MISMATCH, "flipped"));
  r->Done(1, Status::Ok());  // a second report is ignored
  r->FailRest(Status(ErrorCode::FILE_READ_FAIL, "EIO"));
  EXPECT_EQ(r->WaitReady(0), 4u);
  ReadTrailer t = TrailerOf(*r);
  EXPECT_EQ(t.code, ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_EQ(t.failed_range, 1u);
}

TEST(StreamedReadTest, ARangeNotEndedByTheDeadlineFailsTheRead) {
  auto r = ThreeRanges(DeadlineAfter(std::chrono::milliseconds(30)));
  r->Done(0, Status::Ok());
  EXPECT_EQ(r->WaitReady(1), 3u);  // gave up on 1 and 2 after 30 ms
  ReadTrailer t = TrailerOf(*r);
  EXPECT_EQ(t.code, ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(t.failed_range, 1u);
  r->Done(1, Status::Ok());  // a late completion changes nothing
  EXPECT_EQ(TrailerOf(*r).code, ErrorCode::FILE_READ_FAIL);
}

// The data server's sending coroutine never blocks on a read: it looks (Ready), and while
// nothing is ready it sleeps in its event loop until NotifyReady's wake or ReadyBy.
TEST(StreamedReadTest, AWaitingSenderIsWokenOnceItsRangeLandsAndNotBefore) {
  auto r = ThreeRanges(DeadlineAfter(std::chrono::seconds(10)));
  EXPECT_EQ(r->Ready(0), 0u);
  int woken = 0;
  r->NotifyReady(0, [&] { ++woken; });
  r->Done(1, Status::Ok());  // not the range it waits for
  EXPECT_EQ(woken, 0);
  r->Done(0, Status::Ok());
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(r->Ready(0), 2u);
  r->Done(2, Status::Ok());
  EXPECT_EQ(woken, 1);                  // once
  r->NotifyReady(2, [&] { ++woken; });  // already ready: at once
  EXPECT_EQ(woken, 2);
  EXPECT_EQ(r->Ready(2), 2u);  // range 2 and the trailer
}

TEST(StreamedReadTest, PastItsDeadlineALookFailsTheRangesStillOut) {
  auto r = ThreeRanges(DeadlineAfter(std::chrono::milliseconds(20)));
  r->Done(0, Status::Ok());
  EXPECT_EQ(r->Ready(1), 0u);
  EXPECT_EQ(r->ReadyBy(1), r->ReadyBy(0));
  std::this_thread::sleep_until(r->ReadyBy(1));
  EXPECT_EQ(r->Ready(1), 3u);
  EXPECT_EQ(TrailerOf(*r).code, ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(TrailerOf(*r).failed_range, 1u);
}

// With per-range codes the reader learns each range's own outcome: one bad range does not
// make it discard the good ones.
TEST(StreamedReadTest, PerRangeCodesNameEveryFailedRangeAndOnlyThose) {
  auto r = ThreeRanges(DeadlineAfter(std::chrono::seconds(10)), /*range_codes=*/true);
  EXPECT_EQ(r->bytes(), 300u + ReadTrailer::kBytes + 3 * ReadTrailer::kRangeCodeBytes);
  r->Done(2, Status(ErrorCode::CHECKSUM_MISMATCH, "flipped"));
  r->Done(0, Status::Ok());
  r->Done(1, Status::Ok());
  EXPECT_EQ(r->WaitReady(0), 4u);
  asio::const_buffer t = r->Part(3);
  ASSERT_EQ(t.size(), transfer::ReadTrailerBytes(3, true));
  const auto* p = static_cast<const uint8_t*>(t.data());
  EXPECT_EQ(ReadTrailer::Decode(p).code, ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_EQ(ReadTrailer::Decode(p).failed_range, 2u);
  std::vector<rpc::Range> ranges(3);
  for (int i = 0; i < 3; ++i) ranges[i].set_offset(static_cast<uint64_t>(i) * 4096);
  std::vector<Status> each = transfer::DecodeRangeStatus(p + ReadTrailer::kBytes, "s#disk", ranges);
  ASSERT_EQ(each.size(), 3u);
  EXPECT_TRUE(each[0].ok());
  EXPECT_TRUE(each[1].ok());
  EXPECT_EQ(each[2].code(), ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_NE(each[2].message().find("offset=8192"), std::string::npos) << each[2].ToString();
}

TEST(ReadTrailerTest, RoundTripsEveryField) {
  ReadTrailer t{ErrorCode::CHECKSUM_MISMATCH, 0x01020304};
  auto bytes = t.Encode();
  ReadTrailer back = ReadTrailer::Decode(bytes.data());
  EXPECT_EQ(back.code, ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_EQ(back.failed_range, 0x01020304u);
  EXPECT_EQ(ReadTrailer::Decode(transfer::kGoodReadTrailer.data()).code, ErrorCode::OK);
}

}  // namespace
}  // namespace kvpool::hosting
