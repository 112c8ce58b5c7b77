#include "client/embedded/replica_order.h"

#include <gtest/gtest.h>

namespace kvpool::client {
namespace {

rpc::ObjectLocation Location(const std::vector<std::string>& endpoints) {
  rpc::ObjectLocation loc;
  for (const std::string& e : endpoints) {
    rpc::Replica* r = loc.add_replicas();
    r->set_segment_name(e);
    r->set_endpoint(e);
  }
  return loc;
}

std::vector<std::string> Names(const std::vector<const rpc::Replica*>& v) {
  std::vector<std::string> out;
  out.reserve(v.size());
  for (const rpc::Replica* r : v) out.push_back(r->segment_name());
  return out;
}

TEST(ReplicaOrderTest, OwnSegmentThenSameHostThenRemote) {
  ReplicaOrder order("10.0.0.1:7000", "10.0.0.1");
  auto loc = Location({"10.0.0.9:7000", "10.0.0.1:7001", "10.0.0.8:7000", "10.0.0.1:7000"});
  EXPECT_EQ(Names(order.Sorted(loc)), (std::vector<std::string>{"10.0.0.1:7000", "10.0.0.1:7001",
                                                                "10.0.0.9:7000", "10.0.0.8:7000"}));
}

TEST(ReplicaOrderTest, NoOwnSegmentKeepsMasterOrderAmongEquals) {
  ReplicaOrder order("", "10.0.0.5");
  auto loc = Location({"10.0.0.9:1", "10.0.0.8:1"});
  EXPECT_EQ(Names(order.Sorted(loc)), (std::vector<std::string>{"10.0.0.9:1", "10.0.0.8:1"}));
  EXPECT_EQ(order.Distance(loc.replicas(0)), 2);
}

TEST(ReplicaOrderTest, SilentHostGoesLast) {
  PeerHealth health(std::chrono::seconds(5));
  health.Note("10.0.0.9:1", Status(ErrorCode::RPC_TIMEOUT, "no progress"), Clock::now());
  ReplicaOrder order("", "10.0.0.5", &health);
  auto loc = Location({"10.0.0.9:1", "10.0.0.8:1", "10.0.0.5:1"});
  EXPECT_EQ(Names(order.Sorted(loc)),
            (std::vector<std::string>{"10.0.0.5:1", "10.0.0.8:1", "10.0.0.9:1"}));
}

}  // namespace
}  // namespace kvpool::client
