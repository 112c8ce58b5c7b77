// Both transports against a real data server: bytes round-trip exactly whatever the split of
// ranges and buffers, and a range outside the segment is refused before any byte moves.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <thread>

#include "rpc/connection_pool.h"
#include "rpc/server.h"
#include "transfer/data_service.h"
#include "transfer/local_transport.h"
#include "transfer/tcp_transport.h"

namespace kvpool::transfer {
namespace {

class TransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mem = SegmentMemory::Map(1 << 20, {});
    ASSERT_TRUE(mem.ok());
    memory_ = std::shared_ptr<SegmentMemory>(std::move(mem).value());
    ASSERT_TRUE(table_.Add(name_, memory_).ok());
    rpc::ServerOptions o;
    o.host = "127.0.0.1";
    server_ = std::make_unique<rpc::Server>(o, &service_);
    ASSERT_TRUE(server_->Start().ok());
    ep_ = rpc::Endpoint{"127.0.0.1", server_->port()};
  }
  Deadline Soon() { return DeadlineAfter(std::chrono::seconds(5)); }
  static rpc::Range R(uint64_t off, uint64_t len) {
    rpc::Range r;
    r.set_offset(off);
    r.set_length(len);
    return r;
  }
  // Writes `data` as three uneven ranges from two uneven buffers, reads it back as two buffers.
  void RoundTrip(Transport& t) {
    std::vector<uint8_t> data(100000);
    std::mt19937 rng(7);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    std::vector<rpc::Range> ranges = {R(4096, 30000), R(200000, 50000), R(500000, 20000)};
    SegmentRanges where{&name_, &ep_, ranges, memory_->incarnation()};
    iovec src[2] = {{data.data(), 12345}, {data.data() + 12345, data.size() - 12345}};
    ASSERT_TRUE(t.Write(where, src, Soon()).ok());
    std::vector<uint8_t> back(data.size());
    iovec dst[2] = {{back.data(), 77777}, {back.data() + 77777, back.size() - 77777}};
    ASSERT_TRUE(t.Read(where, dst, Soon()).ok());
    EXPECT_EQ(back, data);
    EXPECT_EQ(0, memcmp(memory_->base() + 200000, data.data() + 30000, 50000));
  }
  void RefusesOutside(Transport& t) {
    uint8_t buf[16] = {};
    iovec v{buf, sizeof(buf)};
    std::vector<rpc::Range> ranges = {R((1 << 20) - 8, 16)};
    SegmentRanges where{&name_, &ep_, ranges, memory_->incarnation()};
    EXPECT_EQ(t.Write(where, {&v, 1}, Soon()).code(), ErrorCode::INVALID_WRITE);
    EXPECT_EQ(t.Read(where, {&v, 1}, Soon()).code(), ErrorCode::INVALID_READ);
    std::vector<rpc::Range> wrap = {R(~0ull - 4, 16)};
    SegmentRanges where2{&name_, &ep_, wrap, memory_->incarnation()};
    EXPECT_EQ(t.Read(where2, {&v, 1}, Soon()).code(), ErrorCode::INVALID_READ);
    std::string other = "nope";
    SegmentRanges where3{&other, &ep_, ranges, memory_->incarnation()};
    EXPECT_EQ(t.Read(where3, {&v, 1}, Soon()).code(), ErrorCode::SEGMENT_NOT_FOUND);
  }
  // A location for other memory under this segment's name (the host restarted since the
  // master handed it out, or no incarnation at all): refused before a byte moves.
  void RefusesOtherIncarnation(Transport& t) {
    std::memset(memory_->base(), 0, 4096);
    std::vector<uint8_t> data(4096, 0x77), back(4096, 0x11);
    iovec in{data.data(), data.size()}, out{back.data(), back.size()};
    std::vector<rpc::Range> ranges = {R(0, 4096)};
    for (uint64_t other : {memory_->incarnation() + 1, uint64_t{0}}) {
      SegmentRanges stale{&name_, &ep_, ranges, other};
      Status w = t.Write(stale, {&in, 1}, Soon());
      EXPECT_EQ(w.code(), ErrorCode::SEGMENT_NOT_FOUND) << w.ToString();
      EXPECT_NE(w.message().find("incarnation"), std::string::npos) << w.ToString();
      EXPECT_EQ(t.Read(stale, {&out, 1}, Soon()).code(), ErrorCode::SEGMENT_NOT_FOUND);
    }
    EXPECT_EQ(back, std::vector<uint8_t>(4096, 0x11));
    EXPECT_EQ(memory_->base()[0], 0);
  }

  // SegmentRanges::before_ranges runs for every range, in order, before the range's bytes are
  // read: what it writes into a range's memory is what the segment receives.
  void HookRunsBeforeEachRangeIsRead(Transport& t) {
    constexpr uint64_t kLen = 100 << 10;
    std::vector<rpc::Range> ranges;
    for (uint64_t k = 0; k < 6; ++k) ranges.push_back(R(k * 150000, kLen));
    std::vector<uint8_t> data(6 * kLen, 0);
    iovec src[2] = {{data.data(), 250000}, {data.data() + 250000, data.size() - 250000}};
    std::vector<size_t> seen;
    const std::function<void(size_t, size_t)> before = [&](size_t first, size_t last) {
      for (size_t k = first; k < last; ++k) {
        seen.push_back(k);
        std::memset(data.data() + k * kLen, static_cast<int>(k + 1), kLen);
      }
    };
    SegmentRanges where{&name_, &ep_, ranges, memory_->incarnation(), &before};
    ASSERT_TRUE(t.Write(where, src, Soon()).ok());
    EXPECT_EQ(seen, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
    for (uint64_t k = 0; k < 6; ++k) {
      const uint8_t* at = memory_->base() + k * 150000;
      EXPECT_EQ(at[0], k + 1) << "range " << k;
      EXPECT_EQ(at[kLen - 1], k + 1) << "range " << k;
    }
  }

  std::string name_ = "seg-a";
  std::shared_ptr<SegmentMemory> memory_;
  SegmentTable table_;
  DataService service_{&table_};
  std::unique_ptr<rpc::Server> server_;
  rpc::Endpoint ep_;
};

TEST_F(TransferTest, TcpRoundTrip) {
  rpc::ConnectionPool pool("test");
  TcpTransport t(&pool);
  RoundTrip(t);
  EXPECT_EQ(service_.counters().bytes_written.load(), 100000u);
}

TEST_F(TransferTest, TcpCallsBeforeRangesAheadOfTheirBytes) {
  rpc::ConnectionPool pool("test");
  TcpTransport t(&pool);
  HookRunsBeforeEachRangeIsRead(t);
  RoundTrip(t);  // the connection is still in step
}

TEST_F(TransferTest, LocalCallsBeforeRangesAheadOfTheirBytes) {
  LocalTransport t(&table_);
  HookRunsBeforeEachRangeIsRead(t);
}

TEST_F(TransferTest, LocalRoundTrip) {
  LocalTransport t(&table_);
  EXPECT_TRUE(t.Serves(name_));
  RoundTrip(t);
}

TEST_F(TransferTest, TcpRefusesOutOfSegment) {
  rpc::ConnectionPool pool("test");
  TcpTransport t(&pool);
  RefusesOutside(t);
  // The refused WRITE's payload was drained: the connection still works.
  RoundTrip(t);
}

TEST_F(TransferTest, LocalRefusesOutOfSegment) {
  LocalTransport t(&table_);
  RefusesOutside(t);
}

TEST_F(TransferTest, TcpRefusesAnotherIncarnation) {
  rpc::ConnectionPool pool("test");
  TcpTransport t(&pool);
  RefusesOtherIncarnation(t);
  RoundTrip(t);  // the refused WRITE's payload was drained
}

TEST_F(TransferTest, LocalRefusesAnotherIncarnation) {
  LocalTransport t(&table_);
  RefusesOtherIncarnation(t);
}

TEST(SegmentMemoryTest, BackgroundPrefaultKeepsWhatWritersPutMeanwhile) {
  SegmentMemoryOptions o;
  o.prefault_in_background = true;
  auto m = SegmentMemory::Map(64 << 20, o);
  ASSERT_TRUE(m.ok());
  SegmentMemory& mem = **m;
  // Writes race the prefault thread: none may be lost (MADV_POPULATE_WRITE keeps contents).
  for (uint64_t off = 0; off < mem.size(); off += 1 << 20) mem.base()[off + 7] = 0xa5;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (mem.prefaulted_bytes() < mem.size() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(mem.prefaulted_bytes(), mem.size());
  for (uint64_t off = 0; off < mem.size(); off += 1 << 20) ASSERT_EQ(mem.base()[off + 7], 0xa5);
  // A segment destroyed mid-prefault stops its thread first.
  auto big = SegmentMemory::Map(1ull << 30, o);
  ASSERT_TRUE(big.ok());
  big->reset();
}

// `prefault`: Map returns with every page faulted in (issue 29: a node mounts its segment only
// then), and the memory reads as zeros and takes writes as any other.
TEST(SegmentMemoryTest, PrefaultBeforeReturnFaultsEveryPageIn) {
  SegmentMemoryOptions o;
  o.prefault = true;
  auto m = SegmentMemory::Map((32 << 20) + 4096, o);
  ASSERT_TRUE(m.ok());
  SegmentMemory& mem = **m;
  EXPECT_GE(mem.prefaulted_bytes(), mem.size());
  for (uint64_t off = 0; off < mem.size(); off += 4096) {
    ASSERT_EQ(mem.base()[off], 0);
    ASSERT_EQ(mem.base()[off + 4095], 0);
  }
  mem.base()[mem.size() - 1] = 0x5a;
  EXPECT_EQ(mem.base()[mem.size() - 1], 0x5a);
}

TEST(SegmentMemoryTest, EachMappingHasItsOwnNonZeroIncarnation) {
  auto a = SegmentMemory::Map(4096, {});
  auto b = SegmentMemory::Map(4096, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->incarnation(), 0u);
  EXPECT_NE((*a)->incarnation(), (*b)->incarnation());
}

TEST(SegmentMemoryTest, ZeroSizeAndHugePageErrors) {
  EXPECT_EQ(SegmentMemory::Map(0, {}).code(), ErrorCode::INVALID_PARAMS);
  SegmentMemoryOptions huge;
  huge.huge_pages = true;
  auto r = SegmentMemory::Map(1ull << 40, huge);  // 1 TiB of huge pages is never reserved
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_NE(r.status().message().find("nr_hugepages"), std::string::npos);
}

}  // namespace
}  // namespace kvpool::transfer
