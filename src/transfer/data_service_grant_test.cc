// The data service's grant check on real sockets: a tenant (non-privileged) connection reads
// and writes exactly the ranges the master granted it, and anything else is refused with
// ILLEGAL_CLIENT before a byte moves (a refused WRITE's payload is discarded and the connection
// keeps working). Privileged peers need no grants.
#include <gtest/gtest.h>

#include <cstring>

#include "rpc/connection_pool.h"
#include "rpc/grant.h"
#include "rpc/server.h"
#include "transfer/data_service.h"
#include "transfer/data_service_test_util.h"
#include "transfer/tcp_transport.h"

namespace kvpool::transfer {
namespace {

class DataServiceGrantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mem = SegmentMemory::Map(1 << 20, {});
    ASSERT_TRUE(mem.ok());
    memory_ = std::shared_ptr<SegmentMemory>(std::move(mem).value());
    std::memset(memory_->base(), 0x5a, memory_->size());
    ASSERT_TRUE(table_.Add(name_, memory_).ok());
    rpc::ServerOptions o;
    o.host = "127.0.0.1";
    server_ = std::make_unique<rpc::Server>(o, &tenant_);
    ASSERT_TRUE(server_->Start().ok());
    ep_ = rpc::Endpoint{"127.0.0.1", server_->port()};
  }
  Deadline Soon() { return DeadlineAfter(std::chrono::seconds(30)); }
  // [offset, offset + length) with a grant for [goff, goff + glen) signed by `key`.
  rpc::Range Granted(uint64_t offset, uint64_t length, rpc::GrantMode mode, uint64_t goff,
                     uint64_t glen, const rpc::GrantKey& key, uint64_t expiry = kNow + 60000) {
    rpc::Range r;
    r.set_offset(offset);
    r.set_length(length);
    key.Sign(name_, memory_->incarnation(), goff, glen, mode, expiry, r.mutable_grant());
    return r;
  }
  rpc::Range Granted(uint64_t offset, uint64_t length, rpc::GrantMode mode) {
    return Granted(offset, length, mode, offset, length, key_);
  }
  Status Write(const std::vector<rpc::Range>& ranges, std::vector<uint8_t>& data) {
    SegmentRanges where{&name_, &ep_, ranges, memory_->incarnation()};
    iovec v{data.data(), data.size()};
    return transport_.Write(where, {&v, 1}, Soon());
  }
  Status Read(const std::vector<rpc::Range>& ranges, std::vector<uint8_t>& data) {
    SegmentRanges where{&name_, &ep_, ranges, memory_->incarnation()};
    iovec v{data.data(), data.size()};
    return transport_.Read(where, {&v, 1}, Soon());
  }
  bool Untouched(uint64_t offset, uint64_t length) {
    for (uint64_t i = 0; i < length; ++i) {
      if (memory_->base()[offset + i] != 0x5a) return false;
    }
    return true;
  }
  static void ExpectRefused(const Status& st, const std::string& range) {
    EXPECT_EQ(st.code(), ErrorCode::ILLEGAL_CLIENT) << st.ToString();
    EXPECT_NE(st.message().find(range), std::string::npos) << st.ToString();
  }

  std::string name_ = "seg-a";
  std::shared_ptr<SegmentMemory> memory_;
  SegmentTable table_;
  rpc::GrantKey key_{kSecret};
  DataService service_{&table_, kSecret, &FixedNow};
  AsTenant tenant_{&service_};
  std::unique_ptr<rpc::Server> server_;
  rpc::Endpoint ep_;
  rpc::ConnectionPool pool_{"test", 1};  // calls in sequence reuse one connection
  TcpTransport transport_{&pool_};
};

TEST_F(DataServiceGrantTest, GrantedRangesRoundTrip) {
  std::vector<uint8_t> data(3000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(Write({Granted(4096, 1000, rpc::GrantMode::kWrite),
                     Granted(65536, 2000, rpc::GrantMode::kWrite)},
                    data)
                  .ok());
  std::vector<uint8_t> back(data.size());
  // A read of a part of a granted range is fine too.
  ASSERT_TRUE(Read({Granted(4096, 1000, rpc::GrantMode::kRead),
                    Granted(65536, 2000, rpc::GrantMode::kRead, 65536 - 64, 4096, key_)},
                   back)
                  .ok());
  EXPECT_EQ(back, data);
  EXPECT_EQ(service_.counters().grants_refused.load(), 0u);
}

TEST_F(DataServiceGrantTest, UngrantedWriteIsRefusedAndTouchesNothing) {
  std::vector<uint8_t> data(1000, 0xee);
  rpc::Range bare;
  bare.set_offset(8192);
  bare.set_length(1000);
  ExpectRefused(Write({bare}, data), "segment=seg-a offset=8192 length=1000");
  // One granted range does not cover another in the same request.
  ExpectRefused(
      Write({Granted(0, 500, rpc::GrantMode::kWrite), Granted(8192, 500, rpc::GrantMode::kRead)},
            data),
      "offset=8192 length=500");
  // A grant for a neighbour's range, an expired grant, a grant from another secret.
  ExpectRefused(Write({Granted(8192, 1000, rpc::GrantMode::kWrite, 0, 4096, key_)}, data),
                "outside");
  ExpectRefused(
      Write({Granted(8192, 1000, rpc::GrantMode::kWrite, 8192, 1000, key_, kNow - 60000)}, data),
      "expired");
  rpc::GrantKey forged("guessed secret");
  ExpectRefused(Write({Granted(8192, 1000, rpc::GrantMode::kWrite, 8192, 1000, forged)}, data),
                "MAC");
  EXPECT_TRUE(Untouched(0, 16384));
  EXPECT_EQ(service_.counters().grants_refused.load(), 5u);
  EXPECT_EQ(service_.counters().bytes_written.load(), 0u);
  // The refused payloads were drained: the same connection carries a granted write.
  ASSERT_TRUE(Write({Granted(8192, 1000, rpc::GrantMode::kWrite)}, data).ok());
  EXPECT_FALSE(Untouched(8192, 1000));
}

TEST_F(DataServiceGrantTest, UngrantedReadIsRefused) {
  std::vector<uint8_t> back(1000, 0);
  rpc::Range bare;
  bare.set_offset(0);
  bare.set_length(1000);
  ExpectRefused(Read({bare}, back), "segment=seg-a offset=0 length=1000");
  // A write grant does not allow reading.
  ExpectRefused(Read({Granted(0, 1000, rpc::GrantMode::kWrite)}, back), "mode");
  // A grant for another segment does not transfer.
  rpc::Range other;
  other.set_offset(0);
  other.set_length(1000);
  key_.Sign("seg-b", memory_->incarnation(), 0, 1000, rpc::GrantMode::kRead, kNow + 60000,
            other.mutable_grant());
  ExpectRefused(Read({other}, back), "MAC");
  EXPECT_EQ(service_.counters().bytes_read.load(), 0u);
  EXPECT_EQ(back, std::vector<uint8_t>(1000, 0));
  ASSERT_TRUE(Read({Granted(0, 1000, rpc::GrantMode::kRead)}, back).ok());
  EXPECT_EQ(back, std::vector<uint8_t>(1000, 0x5a));
}

TEST_F(DataServiceGrantTest, HostWithoutSecretRefusesTenants) {
  DataService no_secret(&table_, "", &FixedNow);
  rpc::ConnectionContext tenant;
  tenant.privileged = false;
  rpc::DataRequest req;
  req.set_segment_name(name_);
  req.set_segment_incarnation(memory_->incarnation());
  *req.add_ranges() = Granted(0, 100, rpc::GrantMode::kRead);
  ExpectRefused(no_secret.CheckTenant(tenant, req, rpc::GrantMode::kRead), "no pool secret");
  EXPECT_TRUE(service_.CheckTenant(tenant, req, rpc::GrantMode::kRead).ok());
}

TEST(DataServicePrivilegedTest, PrivilegedPeersNeedNoGrants) {
  auto mem = SegmentMemory::Map(1 << 16, {});
  ASSERT_TRUE(mem.ok());
  SegmentTable table;
  std::string name = "seg-p";
  std::shared_ptr<SegmentMemory> memory(std::move(mem).value());
  const uint64_t incarnation = memory->incarnation();
  ASSERT_TRUE(table.Add(name, std::move(memory)).ok());
  DataService service(&table, kSecret, &FixedNow);
  rpc::ServerOptions o;
  o.host = "127.0.0.1";
  rpc::Server server(o, &service);
  ASSERT_TRUE(server.Start().ok());
  rpc::Endpoint ep{"127.0.0.1", server.port()};
  rpc::ConnectionPool pool("test");
  TcpTransport t(&pool);
  std::vector<uint8_t> data(100, 0x42), back(100);
  rpc::Range r;
  r.set_offset(64);
  r.set_length(100);
  std::vector<rpc::Range> ranges{r};
  SegmentRanges where{&name, &ep, ranges, incarnation};
  iovec in{data.data(), data.size()}, out{back.data(), back.size()};
  ASSERT_TRUE(t.Write(where, {&in, 1}, DeadlineAfter(std::chrono::seconds(30))).ok());
  ASSERT_TRUE(t.Read(where, {&out, 1}, DeadlineAfter(std::chrono::seconds(30))).ok());
  EXPECT_EQ(back, data);
}

}  // namespace
}  // namespace kvpool::transfer
