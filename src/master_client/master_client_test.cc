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

}  // namespace
}  // namespace kvpool::master
