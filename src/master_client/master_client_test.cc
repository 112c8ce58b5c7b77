// MasterClient against a fake master that answers what a broken or hostile one might.
#include "master_client/master_client.h"

#include <gtest/gtest.h>

#include "rpc/kvpool.pb.h"
#include "rpc/server.h"

namespace kvpool::master {
namespace {

// Answers every EXISTS_PREFIX with `count`, whatever the batch.
class LyingMaster : public rpc::Service {
 public:
  explicit LyingMaster(uint32_t count) : count_(count) {}
  asio::awaitable<rpc::Reply> Handle(const rpc::FrameHeader& header, std::string_view,
                                     rpc::PayloadReader&) override {
    if (header.base_method() != rpc::EXISTS_PREFIX) {
      co_return rpc::Reply::Error(Status(ErrorCode::NOT_SUPPORTED, "fake"));
    }
    rpc::ExistsPrefixReply reply;
    reply.set_count(count_);
    co_return rpc::Reply::Of(reply);
  }

 private:
  const uint32_t count_;
};

TEST(MasterClientTest, ExistsPrefixRefusesACountBeyondTheBatch) {
  LyingMaster fake(5);
  rpc::ServerOptions o;
  o.host = "127.0.0.1";
  rpc::Server server(o, &fake);
  ASSERT_TRUE(server.Start().ok());
  MasterClient client(rpc::Endpoint{"127.0.0.1", server.port()}, "c");
  const std::vector<std::string> keys = {"a", "b"};
  auto r = client.ExistsPrefix(keys, DeadlineAfter(std::chrono::seconds(5)));
  ASSERT_FALSE(r.ok()) << "count " << *r << " for 2 keys";
  EXPECT_EQ(r.status().code(), ErrorCode::INTERNAL_ERROR);
  EXPECT_NE(r.status().message().find("EXISTS_PREFIX with 5 keys of 2"), std::string::npos)
      << r.status().ToString();
}

// Grants a lease per GET_REPLICA_LIST (ids 100, 101, ...), each key found with no replica.
class LeasingMaster : public rpc::Service {
 public:
  asio::awaitable<rpc::Reply> Handle(const rpc::FrameHeader& header, std::string_view meta,
                                     rpc::PayloadReader&) override {
    if (header.base_method() != rpc::GET_REPLICA_LIST) {
      co_return rpc::Reply::Error(Status(ErrorCode::NOT_SUPPORTED, "fake"));
    }
    rpc::KeysRequest req;
    req.ParseFromArray(meta.data(), static_cast<int>(meta.size()));
    rpc::GetReplicaListReply reply;
    const int keys = req.keys_size() > 0 ? req.keys_size() : 0;
    for (int i = 0; i < keys; ++i) reply.add_objects();
    reply.set_lease_ttl_ms(5000);
    reply.set_lease_id(next_lease_++);
    reply.set_client_handle(7);
    reply.set_client_ttl_ms(10000);
    co_return rpc::Reply::Of(reply);
  }

 private:
  uint64_t next_lease_ = 100;
};

// A batch larger than one request (8,192 keys) is asked in chunks; the merged reply keeps every
// chunk's lease, so the reader can release them all (none waits for its TTL).
TEST(MasterClientTest, ChunkedGetReplicaListKeepsEveryLease) {
  LeasingMaster fake;
  rpc::ServerOptions o;
  o.host = "127.0.0.1";
  rpc::Server server(o, &fake);
  ASSERT_TRUE(server.Start().ok());
  MasterClient client(rpc::Endpoint{"127.0.0.1", server.port()}, "c");
  std::vector<std::string> keys;
  keys.reserve(20000);
  for (int i = 0; i < 20000; ++i) keys.push_back("k" + std::to_string(i));
  auto r = client.GetReplicaList(keys, /*no_lease=*/false, DeadlineAfter(std::chrono::seconds(5)));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->objects_size(), 20000);
  EXPECT_EQ(r->lease_id(), 100u);
  EXPECT_EQ(std::vector<uint64_t>(r->more_lease_ids().begin(), r->more_lease_ids().end()),
            (std::vector<uint64_t>{101, 102}));
  EXPECT_EQ(r->client_handle(), 7u);
  EXPECT_EQ(r->client_ttl_ms(), 10000u);
}

}  // namespace
}  // namespace kvpool::master
