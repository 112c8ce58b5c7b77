#include "ha/etcd_address.h"

#include <gtest/gtest.h>

namespace kvpool::ha {

TEST(EtcdAddressTest, ParsesMembersAndClusterId) {
  auto a = ParseMasterAddress("etcd://10.0.0.1:2379;10.0.0.2;[::1]:2380/prod-1", 50051, "--master");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->via_etcd);
  ASSERT_EQ(a->etcd.endpoints.size(), 3u);
  EXPECT_EQ(a->etcd.endpoints[1].ToString(), "10.0.0.2:2379");  // default etcd port
  EXPECT_EQ(a->etcd.endpoints[2].host, "::1");
  EXPECT_EQ(a->etcd.cluster_id, "prod-1");
  // Printed back, it parses to the same (IPv6 members in brackets).
  EXPECT_EQ(a->ToString(), "etcd://10.0.0.1:2379;10.0.0.2:2379;[::1]:2380/prod-1");
  auto again = ParseMasterAddress(a->ToString(), 50051, "--master");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ToString(), a->ToString());
  auto b = ParseMasterAddress("etcd://h1:2379,h2:2379", 50051, "--master");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->etcd.cluster_id, kDefaultClusterId);
  EXPECT_EQ(b->ToString(), "etcd://h1:2379;h2:2379/kvpool");
}

TEST(EtcdAddressTest, PlainAddressIsOneMaster) {
  auto a = ParseMasterAddress("127.0.0.1", 50051, "--master");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->via_etcd);
  EXPECT_EQ(a->endpoint.ToString(), "127.0.0.1:50051");
}

TEST(EtcdAddressTest, MalformedAddressesNameTheTextAndTheForm) {
  for (const char* bad :
       {"etcd://", "etcd:///c", "etcd://h1:2379;;h2:2379", "etcd://h1:99999", "etcd://h1:2379/",
        "etcd://h1:2379/bad id", "http://h1:2379", "etcd://:2379"}) {
    auto a = ParseMasterAddress(bad, 50051, "--master");
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.code(), ErrorCode::INVALID_PARAMS) << bad;
    EXPECT_NE(a.status().message().find("--master"), std::string::npos) << a.status().message();
  }
  auto a = ParseMasterAddress("etcd://h1:2379/bad id", 50051, "--master");
  EXPECT_NE(a.status().message().find("etcd://host:port"), std::string::npos)
      << a.status().message();
}

TEST(EtcdAddressTest, ClusterIds) {
  EXPECT_TRUE(ValidateClusterId("a.b_c-9", "--cluster_id").ok());
  EXPECT_FALSE(ValidateClusterId("", "--cluster_id").ok());
  EXPECT_FALSE(ValidateClusterId("a/b", "--cluster_id").ok());
  EXPECT_FALSE(ValidateClusterId(std::string(129, 'a'), "--cluster_id").ok());
}

TEST(EtcdAddressTest, HostPortParsesBack) {
  for (const rpc::Endpoint& ep : {rpc::Endpoint{"10.0.0.1", 50051}, rpc::Endpoint{"::1", 50051},
                                  rpc::Endpoint{"master-1", 7}}) {
    auto back = rpc::ParseEndpoint(HostPort(ep));
    ASSERT_TRUE(back.ok()) << HostPort(ep) << ": " << back.status().ToString();
    EXPECT_EQ(back->host, ep.host);
    EXPECT_EQ(back->port, ep.port);
  }
  EXPECT_EQ(HostPort({"::1", 50051}), "[::1]:50051");
}

}  // namespace kvpool::ha
