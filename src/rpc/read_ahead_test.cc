// Both ends read a frame's header and meta together, in as few reads as the bytes' arrival
// allows: rpc::Connection a reply without payload (Connection::ReadReplyHead), the server any
// request (PlainStream's read-ahead, whose bytes past the meta are the payload's head). Metas
// and payloads of every size around the read-ahead must come out whole, and a reply with bytes
// the caller did not ask for must fail as it did when read piece by piece.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "rpc/connection.h"
#include "rpc/echo_service_test_util.h"
#include "rpc/server.h"

namespace kvpool::rpc {
namespace {

// EchoService, and STAT answered with an error whose message is `message_size` bytes long: a
// reply's meta of any size the test picks.
class SizedReplyService : public EchoService {
 public:
  asio::awaitable<Reply> Handle(const FrameHeader& h, std::string_view meta,
                                PayloadReader& payload) override {
    if (h.method == STAT) {
      std::string message(message_size, '\0');
      for (size_t i = 0; i < message.size(); ++i) message[i] = static_cast<char>('a' + i % 26);
      co_return Reply::Error(Status(ErrorCode::INVALID_PARAMS, std::move(message)));
    }
    co_return co_await EchoService::Handle(h, meta, payload);
  }
  size_t message_size = 0;
};

class ReplyReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.host = "127.0.0.1";
    server_ = std::make_unique<Server>(o, &service_);
    ASSERT_TRUE(server_->Start().ok());
    auto c = Connection::Connect(Endpoint{"127.0.0.1", server_->port()}, "t", Soon());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    conn_ = std::move(c).value();
  }
  static Deadline Soon() { return DeadlineAfter(std::chrono::seconds(5)); }

  SizedReplyService service_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Connection> conn_;
};

TEST_F(ReplyReadTest, MetasAroundTheReadAheadComeOutWhole) {
  // Around 4 KiB (the read-ahead) and well past it, where the rest of the meta is read after.
  for (size_t size : std::vector<size_t>{0, 1, 4000, 4070, 4080, 4096, 4097, 4200, 70000}) {
    service_.message_size = size;
    Empty resp;
    Status st = conn_->Call(STAT, Empty(), &resp, Soon());
    ASSERT_EQ(st.code(), ErrorCode::INVALID_PARAMS) << "message of " << size << " bytes";
    ASSERT_EQ(st.message().size(), size);
    for (size_t i = 0; i < size; ++i) {
      ASSERT_EQ(st.message()[i], static_cast<char>('a' + i % 26)) << "byte " << i << " of " << size;
    }
    // The stream stays in step: an ordinary call on the same connection works.
    ASSERT_TRUE(conn_->Call(READ, Empty(), &resp, Soon()).ok()) << "after " << size;
  }
}

TEST_F(ReplyReadTest, PayloadsAroundTheServersReadAheadRoundTrip) {
  // A payload's head can come with the request's header into the server's read-ahead (4 KiB);
  // from 256 KiB on the rest is read with a low-water mark (rpc/receive_low_water.h).
  for (size_t size : std::vector<size_t>{1, 4000, 4060, 4096, 5000, 262144, 262145, 1048583}) {
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 7 + size);
    iovec out{bytes.data(), bytes.size()};
    Empty resp;
    ASSERT_TRUE(conn_->Call(WRITE, Empty(), &resp, {&out, 1}, {}, Soon()).ok()) << size;
    std::string back(size, '\0');
    iovec in{back.data(), back.size()};
    ASSERT_TRUE(conn_->Call(READ, Empty(), &resp, {}, {&in, 1}, Soon()).ok()) << size;
    ASSERT_EQ(back, bytes) << "a payload of " << size << " bytes";
  }
}

TEST_F(ReplyReadTest, APayloadNobodyAskedForFailsTheCallAndTheConnection) {
  std::string bytes(100, 'x');
  iovec out{bytes.data(), bytes.size()};
  Empty resp;
  ASSERT_TRUE(conn_->Call(WRITE, Empty(), &resp, {&out, 1}, {}, Soon()).ok());
  // READ answers with the 100 bytes; a caller that expects none is told, whether they came
  // with the header or after it, and the connection is not reused out of step.
  Status st = conn_->Call(READ, Empty(), &resp, Soon());
  EXPECT_EQ(st.code(), ErrorCode::TRANSFER_FAIL) << st.ToString();
  EXPECT_TRUE(conn_->broken());
}

}  // namespace
}  // namespace kvpool::rpc

namespace kvpool::rpc {
namespace {

// A server without read-ahead (a segment host's data port) reads each payload straight into
// its destination, and round-trips the same sizes.
TEST(NoReadAheadTest, PayloadsRoundTrip) {
  EchoService service;
  ServerOptions o;
  o.host = "127.0.0.1";
  o.read_ahead = false;
  Server server(o, &service);
  ASSERT_TRUE(server.Start().ok());
  auto c = Connection::Connect(Endpoint{"127.0.0.1", server.port()}, "t",
                               DeadlineAfter(std::chrono::seconds(5)));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (size_t size : std::vector<size_t>{1, 4060, 262145}) {
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 13 + size);
    iovec out{bytes.data(), bytes.size()};
    Empty resp;
    ASSERT_TRUE(
        (*c)->Call(WRITE, Empty(), &resp, {&out, 1}, {}, DeadlineAfter(std::chrono::seconds(5)))
            .ok());
    std::string back(size, '\0');
    iovec in{back.data(), back.size()};
    ASSERT_TRUE(
        (*c)->Call(READ, Empty(), &resp, {}, {&in, 1}, DeadlineAfter(std::chrono::seconds(5)))
            .ok());
    ASSERT_EQ(back, bytes) << size;
  }
}

}  // namespace
}  // namespace kvpool::rpc
