// The node's HTTP answers, without a server: /metrics text from known counters, /status JSON.
#include "node/node_admin.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace kvpool::node {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

class NodeAdminTest : public ::testing::Test {
 protected:
  NodeAdminTest() : admin_(&metrics_, [this] { return gauges_; }) {
    gauges_.segment_name = "10.0.0.7:50052";
    gauges_.segment_bytes = 1 << 30;
    gauges_.master_reachable = true;
    gauges_.start_unix_seconds = 1.7e9;
    gauges_.attach.set_sessions(2);
    gauges_.attach.set_mapped_bytes(3 << 20);
    gauges_.attach.set_copied_bytes(4096);
    data_.writes = 3;
    data_.bytes_written = 300;
    data_.reads = 5;
    data_.bytes_read = 500;
    data_.requests_refused = 1;
    gauges_.data = &data_;
  }

  NodeMetrics metrics_;
  transfer::DataServiceCounters data_;
  NodeGauges gauges_;
  NodeAdmin admin_;
};

TEST_F(NodeAdminTest, MetricsReportTheNodesState) {
  metrics_.RecordLocal(rpc::LOCAL_PUT, ErrorCode::OK, 2'000'000);
  metrics_.RecordLocal(rpc::LOCAL_GET, ErrorCode::OK, 1'000);
  metrics_.RecordLocal(rpc::LOCAL_GET, ErrorCode::ILLEGAL_CLIENT, 1'000);
  metrics_.RecordLocal(999, ErrorCode::NOT_SUPPORTED, 1'000);  // an unknown method
  EXPECT_EQ(metrics_.local_requests(rpc::LOCAL_GET), 2u);
  EXPECT_EQ(metrics_.local_errors(rpc::LOCAL_GET, ErrorCode::ILLEGAL_CLIENT), 1u);

  HttpResponse r = admin_.Get("/metrics", {});
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.content_type.find("version=0.0.4"), std::string::npos);
  const std::string& t = r.body;
  EXPECT_TRUE(Has(t, "kvpool_node_info{segment=\"10.0.0.7:50052\"} 1")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_segment_capacity_bytes 1073741824")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_master_reachable 1")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_data_requests_total{op=\"write\"} 3")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_data_bytes_total{op=\"read\"} 500")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_data_requests_refused_total 1")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_local_clients 2")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_local_mapped_bytes 3145728")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_local_copied_bytes_total 4096")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_local_requests_total{method=\"put\"} 1")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_local_requests_total{method=\"get\"} 2")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_local_requests_total{method=\"other\"} 1")) << t;
  EXPECT_TRUE(Has(t, "kvpool_node_local_errors_total{method=\"get\",code=\"ILLEGAL_CLIENT\"} 1"))
      << t;
  EXPECT_TRUE(Has(t, "kvpool_node_local_request_duration_seconds_count{method=\"put\"} 1")) << t;
}

TEST_F(NodeAdminTest, StatusHealthAndUnknownPaths) {
  EXPECT_EQ(admin_.Get("/health", {}).body, "OK");
  HttpResponse r = admin_.Get("/status", {});
  ASSERT_EQ(r.status, 200);
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["segment"], "10.0.0.7:50052");
  EXPECT_EQ(j["data"]["bytes_written"], 300);
  EXPECT_EQ(j["local_clients"]["attached"], 2);
  EXPECT_EQ(admin_.Get("/nope", {}).status, 404);
}

}  // namespace
}  // namespace kvpool::node
