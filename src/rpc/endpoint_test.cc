#include "rpc/endpoint.h"

#include <gtest/gtest.h>

namespace kvpool::rpc {

TEST(EndpointTest, Parses) {
  auto a = ParseEndpoint("127.0.0.1:50051");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 50051);
  auto b = ParseEndpoint("[::1]:7", 0);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  auto c = ParseEndpoint("node-a", 50052);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port, 50052);
}

TEST(EndpointTest, RejectsBad) {
  for (const char* bad : {"", ":5", "h:", "h:0", "h:70000", "h:x1", "[::1", "a]:b:5", "::1:5", "[a[b]:5"}) {
    EXPECT_EQ(ParseEndpoint(bad).code(), ErrorCode::INVALID_PARAMS) << bad;
  }
}

}  // namespace kvpool::rpc
