// WRITEs that name their objects (DataRequest.record_keys) on real sockets: the checksums
// travel after the bytes, and the host lists the objects for a pool component only; a tenant's
// bytes are written but nothing is listed, and a malformed request moves nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "common/checksum.h"
#include "common/keys.h"
#include "rpc/connection.h"
#include "rpc/connection_pool.h"
#include "rpc/grant.h"
#include "transfer/data_service.h"
#include "transfer/data_service_test_util.h"
#include "transfer/tcp_transport.h"

namespace kvpool::transfer {
namespace {

Deadline Soon() { return DeadlineAfter(std::chrono::seconds(30)); }

class WriteRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mem = SegmentMemory::Map(8 << 20, {});
    ASSERT_TRUE(mem.ok());
    memory_ = std::shared_ptr<SegmentMemory>(std::move(mem).value());
    ASSERT_TRUE(table_.Add(name_, memory_).ok());
    service_.set_write_recorder(&recorder_);
    rpc::ServerOptions o;
    o.host = "127.0.0.1";
    pool_server_ = std::make_unique<rpc::Server>(o, &service_);
    tenant_server_ = std::make_unique<rpc::Server>(o, &tenant_);
    unlisting_server_ = std::make_unique<rpc::Server>(o, &unlisting_);
    ASSERT_TRUE(pool_server_->Start().ok());
    ASSERT_TRUE(tenant_server_->Start().ok());
    ASSERT_TRUE(unlisting_server_->Start().ok());
    pool_ep_ = rpc::Endpoint{"127.0.0.1", pool_server_->port()};
    tenant_ep_ = rpc::Endpoint{"127.0.0.1", tenant_server_->port()};
    unlisting_ep_ = rpc::Endpoint{"127.0.0.1", unlisting_server_->port()};
  }
  // Writes `objects` consecutive objects of `size` bytes at offset 0, hashing each right
  // before it is sent as the put path does, and naming every one but `unnamed` (keys of at
  // least `key_bytes`); each range with the master's grant when `granted` (a tenant's write).
  Status WriteNamed(const rpc::Endpoint& ep, size_t objects, uint64_t size, size_t unnamed,
                    bool* recorded, bool granted = false, size_t key_bytes = 0) {
    data_.resize(objects * size);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<uint8_t>(i * 31 + i / 4093);
    ranges_.clear();
    keys_.clear();
    names_.clear();
    for (size_t i = 0; i < objects; ++i) {
      rpc::Range& r = ranges_.emplace_back();
      r.set_offset(i * size);
      r.set_length(size);
      r.set_journal_seq(40 + i);
      if (granted) {
        key_.Sign(name_, memory_->incarnation(), i * size, size, rpc::GrantMode::kWrite,
                  kNow + 60000, r.mutable_grant());
      }
      names_.push_back(std::string(key_bytes, 'k') + "page-" + std::to_string(i));
    }
    for (size_t i = 0; i < objects; ++i) {
      keys_.push_back(i == unnamed ? std::string_view() : std::string_view(names_[i]));
    }
    sums_.assign(objects, 0);
    const std::function<void(size_t, size_t)> before = [&](size_t first, size_t last) {
      for (size_t k = first; k < last; ++k) sums_[k] = ChecksumOf(data_.data() + k * size, size);
    };
    const std::function<uint64_t(size_t)> checksum = [&](size_t k) { return sums_[k]; };
    SegmentRanges where{&name_, &ep, ranges_, memory_->incarnation()};
    where.before_ranges = &before;
    where.record_keys = &keys_;
    where.record_checksum = &checksum;
    where.recorded = recorded;
    iovec v{data_.data(), data_.size()};
    return transport_.Write(where, {&v, 1}, Soon());
  }

  std::string name_ = "seg-w";
  std::shared_ptr<SegmentMemory> memory_;
  SegmentTable table_;
  RecordingWrites recorder_;
  rpc::GrantKey key_{kSecret};
  DataService service_{&table_, kSecret, &FixedNow};
  AsTenant tenant_{&service_};
  DataService unlisting_{&table_};  // a host that keeps no object list: no recorder
  std::unique_ptr<rpc::Server> pool_server_, tenant_server_, unlisting_server_;
  rpc::Endpoint pool_ep_, tenant_ep_, unlisting_ep_;
  rpc::ConnectionPool pool_{"test"};
  TcpTransport transport_{&pool_};
  std::vector<uint8_t> data_;
  std::vector<rpc::Range> ranges_;
  std::vector<std::string> names_;
  std::vector<std::string_view> keys_;
  std::vector<uint64_t> sums_;
};

// Several pieces (1 MiB objects, 256 KiB pieces): the trailer follows the last one.
TEST_F(WriteRecordsTest, APoolComponentsWriteListsItsObjectsWithTheirChecksums) {
  bool recorded = false;
  ASSERT_TRUE(WriteNamed(pool_ep_, 5, 1 << 20, /*unnamed=*/3, &recorded).ok());
  EXPECT_TRUE(recorded);
  EXPECT_EQ(std::memcmp(memory_->base(), data_.data(), data_.size()), 0);
  auto listed = recorder_.listed();
  ASSERT_EQ(listed.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(listed[i].key, i == 3 ? "" : names_[i]) << i;
    EXPECT_EQ(listed[i].offset, i << 20);
    EXPECT_EQ(listed[i].length, 1u << 20);
    EXPECT_EQ(listed[i].checksum, ChecksumOf(data_.data() + (i << 20), 1 << 20)) << i;
    EXPECT_EQ(listed[i].journal_seq, 40 + i);
  }
  EXPECT_EQ(service_.counters().bytes_written.load(), 5u << 20);  // the trailer is not bytes
}

// A tenant's grant covers bytes, not keys: what it names is not listed (it would put objects
// into a successor master's table on its own say).
TEST_F(WriteRecordsTest, ATenantsWriteIsWrittenButNothingIsListed) {
  bool recorded = true;
  ASSERT_TRUE(WriteNamed(tenant_ep_, 2, 4096, 99, &recorded, /*granted=*/true).ok());
  EXPECT_FALSE(recorded);
  EXPECT_EQ(std::memcmp(memory_->base(), data_.data(), data_.size()), 0);
  EXPECT_TRUE(recorder_.listed().empty());
}

// Keys beyond TcpTransport::kMaxRecordKeyBytes are not named (the request would near the
// frame's meta limit): the bytes are written, nothing is listed, and the writer knows it.
TEST_F(WriteRecordsTest, AWriteOfTooManyKeyBytesNamesNothing) {
  const size_t objects = TcpTransport::kMaxRecordKeyBytes / 4000 + 2;
  bool recorded = true;
  ASSERT_TRUE(WriteNamed(pool_ep_, objects, 64, objects, &recorded, false, 4000).ok());
  EXPECT_FALSE(recorded);
  EXPECT_TRUE(recorder_.listed().empty());
  EXPECT_EQ(std::memcmp(memory_->base(), data_.data(), data_.size()), 0);
}

// Requests a kvpool client never sends: refused before a byte lands, the connection usable.
TEST_F(WriteRecordsTest, AMalformedNamedWriteIsRefusedAndMovesNothing) {
  auto conn = rpc::Connection::Connect(pool_ep_, "test", Soon());
  ASSERT_TRUE(conn.ok());
  std::vector<uint8_t> bytes(4096 + 16, 0xab);  // the largest payload sent below
  std::memset(memory_->base(), 0, 8192);
  auto request = [&](int keys, size_t payload, size_t key_bytes = 1) {
    rpc::DataRequest req;
    req.set_segment_name(name_);
    req.set_segment_incarnation(memory_->incarnation());
    rpc::Range* r = req.add_ranges();
    r->set_offset(0);
    r->set_length(4096);
    for (int i = 0; i < keys; ++i) req.add_record_keys(std::string(key_bytes, 'k'));
    rpc::WriteReply reply;
    iovec v{bytes.data(), payload};
    return (*conn)->Call(rpc::WRITE, req, &reply, {&v, 1}, {}, Soon());
  };
  Status two_keys = request(2, 4096 + 16);
  EXPECT_EQ(two_keys.code(), ErrorCode::INVALID_PARAMS) << two_keys.ToString();
  Status long_key = request(1, 4096 + 8, kMaxKeyBytes + 1);
  EXPECT_EQ(long_key.code(), ErrorCode::INVALID_PARAMS) << long_key.ToString();
  Status no_trailer = request(1, 4096);
  EXPECT_EQ(no_trailer.code(), ErrorCode::INVALID_PARAMS) << no_trailer.ToString();
  EXPECT_NE(no_trailer.message().find("record trailer"), std::string::npos);
  for (int i = 0; i < 8192; ++i) ASSERT_EQ(memory_->base()[i], 0) << i;
  EXPECT_TRUE(recorder_.listed().empty());
  ASSERT_TRUE(request(1, 4096 + 8).ok());
  EXPECT_EQ(recorder_.listed().size(), 1u);
}

// A host that keeps no list (no recorder) writes the bytes and says it listed nothing.
TEST_F(WriteRecordsTest, AHostWithoutAListWritesUnlisted) {
  bool recorded = true;
  ASSERT_TRUE(WriteNamed(unlisting_ep_, 3, 4096, 99, &recorded).ok());
  EXPECT_FALSE(recorded);
  EXPECT_EQ(std::memcmp(memory_->base(), data_.data(), data_.size()), 0);
  EXPECT_TRUE(recorder_.listed().empty());
}

}  // namespace
}  // namespace kvpool::transfer
