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

// Issue 33: etcd members as etcd users write them (http://host:port) are taken; what is not
// taken is refused up front with a message naming the right form.
TEST(EtcdAddressTest, HttpMembersAreTakenOtherFormsRefusedNamingTheRightOne) {
  auto eps = ParseEtcdEndpoints("http://127.0.0.1:2379,HTTP://h2:2380/;h3", "--etcd_endpoints");
  ASSERT_TRUE(eps.ok()) << eps.status().ToString();
  ASSERT_EQ(eps->size(), 3u);
  EXPECT_EQ((*eps)[0].ToString(), "127.0.0.1:2379");
  EXPECT_EQ((*eps)[1].ToString(), "h2:2380");
  EXPECT_EQ((*eps)[2].ToString(), "h3:2379");
  for (const char* bad : {"https://h1:2379", "grpc://h1:2379", "user@h1:2379",
                          "http://user:pw@h1:2379", "h1:2379/v3"}) {
    auto r = ParseEtcdEndpoints(bad, "--etcd_endpoints");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.code(), ErrorCode::INVALID_PARAMS);
    EXPECT_NE(r.status().message().find("http://host:port"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(r.status().message().find("IPv6"), std::string::npos) << r.status().message();
  }
  // A scheme after etcd:// is named as such, not as a bad cluster id.
  auto a = ParseMasterAddress("etcd://http://127.0.0.1:2379/c1", 50051, "--master");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("without a scheme"), std::string::npos)
      << a.status().message();
  EXPECT_EQ(a.status().message().find("cluster id"), std::string::npos) << a.status().message();
  // User info is refused at once, not found out as "unreachable" seconds later.
  a = ParseMasterAddress("etcd://user@127.0.0.1:2379/c1", 50051, "--master");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("user@"), std::string::npos) << a.status().message();
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
