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
  for (const char* bad :
       {"", ":5", "h:", "h:0", "h:70000", "h:x1", "[::1", "a]:b:5", "::1:5", "[a[b]:5"}) {
    EXPECT_EQ(ParseEndpoint(bad).code(), ErrorCode::INVALID_PARAMS) << bad;
  }
}

TEST(IsLoopbackHost, KnowsLiteralsAndTheUsualNames) {
  for (const char* yes : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1", "localhost",
                          "LOCALHOST", "ip6-localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(yes)) << yes;
  }
  for (const char* no : {"10.0.0.2", "0.0.0.0", "::", "fd00::1", "node-a", "128.0.0.1", ""}) {
    EXPECT_FALSE(IsLoopbackHost(no)) << no;
  }
}

TEST(LocalAddressToward, LoopbackPeerGivesALoopbackSource) {
  auto a = LocalAddressToward("127.0.0.1", 50051, "--master_server_address");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(IsLoopbackHost(*a)) << *a;
}

TEST(LocalAddressToward, UnresolvableHostNamesTheFlag) {
  auto a = LocalAddressToward("no-such-host.invalid", 1, "--master_server_address");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(a.status().message().find("--master_server_address"), std::string::npos);
}

}  // namespace kvpool::rpc
