// `kvpool top`'s reading of /metrics: the text parser and the rendered screen.
#include "tools/top_view.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tools/prom_text.h"

namespace kvpool::tools {
namespace {

TEST(PromTextTest, ParsesSamplesLabelsEscapesAndSpecialValues) {
  size_t skipped = 0;
  auto s = ParsePromText(
      "# HELP a help\n# TYPE a counter\n"
      "a 1\n"
      "b{x=\"1\",y=\"q\\\"\\\\\\n\"} 2.5 1700000000000\n"
      "c{le=\"+Inf\",} +Inf\n"
      "d NaN\r\n"
      "  \n"
      "bad{x=1} 3\n"
      "bad2{x=\"unterminated} 3\n"
      "bad3 notanumber\n"
      "9bad 1\n",
      &skipped);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].name, "a");
  EXPECT_EQ(s[0].value, 1);
  EXPECT_EQ(s[1].label("x"), "1");
  EXPECT_EQ(s[1].label("y"), "q\"\\\n");
  EXPECT_EQ(s[1].label("absent"), "");
  EXPECT_EQ(s[1].value, 2.5);
  EXPECT_TRUE(std::isinf(s[2].value));
  EXPECT_TRUE(std::isnan(s[3].value));
  EXPECT_EQ(skipped, 4u);
}

constexpr const char* kFirst = R"(kvpool_master_segment_capacity_bytes{segment="n:2"} 2048
kvpool_master_segment_capacity_bytes{segment="n:1"} 1024
kvpool_master_segment_used_bytes{segment="n:1"} 512
kvpool_master_segment_objects{segment="n:1"} 3
kvpool_master_capacity_bytes 3072
kvpool_master_used_bytes 512
kvpool_master_objects 3
kvpool_master_clients_alive 2
kvpool_master_requests_total{method="get_replica_list"} 10
kvpool_master_request_keys_total{method="get_replica_list"} 100
kvpool_master_found_keys_total{method="get_replica_list"} 50
kvpool_master_requests_total{method="ping"} 0
kvpool_master_request_duration_seconds_bucket{method="get_replica_list",le="0.001"} 10
kvpool_master_request_duration_seconds_bucket{method="get_replica_list",le="0.01"} 10
kvpool_master_request_duration_seconds_bucket{method="get_replica_list",le="+Inf"} 10
kvpool_master_request_duration_seconds_sum{method="get_replica_list"} 0.005
kvpool_master_request_duration_seconds_count{method="get_replica_list"} 10
)";

TEST(TopViewTest, SnapshotAndRates) {
  TopSnapshot a = SnapshotOf(ParsePromText(kFirst));
  ASSERT_EQ(a.segments.size(), 2u);
  EXPECT_EQ(a.segments[0].name, "n:1");  // sorted
  EXPECT_EQ(a.segments[0].used, 512);
  EXPECT_EQ(a.methods["get_replica_list"].requests, 10);
  std::string first = RenderTop("title", a, nullptr, 0);
  EXPECT_NE(first.find("pool: 2 segments, capacity 3.00 KiB, used 512 B (16.7%), 3 objects"),
            std::string::npos)
      << first;
  EXPECT_NE(first.find("n:1"), std::string::npos);
  EXPECT_NE(first.find("(rates from the next refresh on)"), std::string::npos);
  EXPECT_EQ(first.find("ping"), std::string::npos);  // never called: not shown

  // 2 s later: 20 more requests carrying 200 keys, 150 found, all in the 10 ms bucket.
  std::string text = kFirst;
  auto replace = [&text](const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
  };
  replace("{method=\"get_replica_list\"} 10\n", "{method=\"get_replica_list\"} 30\n");
  replace("keys_total{method=\"get_replica_list\"} 100",
          "keys_total{method=\"get_replica_list\"} 300");
  replace("found_keys_total{method=\"get_replica_list\"} 50",
          "found_keys_total{method=\"get_replica_list\"} 200");
  replace("le=\"0.01\"} 10", "le=\"0.01\"} 30");
  replace("le=\"+Inf\"} 10", "le=\"+Inf\"} 30");
  replace("sum{method=\"get_replica_list\"} 0.005", "sum{method=\"get_replica_list\"} 0.105");
  replace("count{method=\"get_replica_list\"} 10", "count{method=\"get_replica_list\"} 30");
  text += "kvpool_master_errors_total{method=\"get_replica_list\",code=\"OBJECT_NOT_FOUND\"} 50\n";
  TopSnapshot b = SnapshotOf(ParsePromText(text));
  std::string second = RenderTop("title", b, &a, 2.0);
  // 10.0 req/s, 100.0 keys/s, 75.0% found, 25.0 err/s, avg 5 ms, p99 in the 10 ms bucket.
  EXPECT_NE(second.find("get_replica_list         10.0      100.0   75.0%      25.0     5.000"
                        "    10.000"),
            std::string::npos)
      << second;
  EXPECT_NE(second.find("errors: OBJECT_NOT_FOUND 25.0/s"), std::string::npos) << second;
}

TEST(TopViewTest, OnlyAMastersMetricsAreShown) {
  auto master = ParsePromText("kvpool_master_info{epoch=\"00ab\"} 1\nkvpool_master_objects 3\n");
  EXPECT_TRUE(CheckMasterMetrics(master, "h:1").ok());
  auto node = ParsePromText(
      "kvpool_node_info{segment=\"10.0.0.5:50052\"} 1\nkvpool_node_start_time_seconds 5\n");
  Status st = CheckMasterMetrics(node, "h:2");
  EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(st.message().find("http://h:2/metrics is kvpool node 10.0.0.5:50052's, not the "
                              "master's"),
            std::string::npos)
      << st.message();
  st = CheckMasterMetrics(ParsePromText("go_goroutines 12\n"), "h:3");
  EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(st.message().find("http://h:3/metrics has no kvpool_master_info (1 samples)"),
            std::string::npos)
      << st.message();
}

TEST(TopViewTest, DiskTiersLineWhenTheNodesHaveOne) {
  const std::string base = kFirst;
  EXPECT_EQ(RenderTop("t", SnapshotOf(ParsePromText(base)), nullptr, 0).find("disk tiers"),
            std::string::npos);  // no disk tier: no line
  const std::string disk = base +
                           "kvpool_master_tier_capacity_bytes{tier=\"disk\"} 4096\n"
                           "kvpool_master_tier_used_bytes{tier=\"disk\"} 1024\n"
                           "kvpool_master_disk_replicas 3\n"
                           "kvpool_master_demoted_objects_total 10\n"
                           "kvpool_master_promoted_objects_total 2\n";
  TopSnapshot a = SnapshotOf(ParsePromText(disk));
  std::string first = RenderTop("t", a, nullptr, 0);
  EXPECT_NE(first.find("disk tiers: capacity 4.00 KiB, used 1.00 KiB (25.0%), 3 replicas; "
                       "demoted 10, promoted 2"),
            std::string::npos)
      << first;
  std::string later = disk;
  later.replace(later.find("demoted_objects_total 10"), 24, "demoted_objects_total 30");
  std::string second = RenderTop("t", SnapshotOf(ParsePromText(later)), &a, 2.0);
  EXPECT_NE(second.find("demoted 10.0/s, promoted 0.0/s"), std::string::npos) << second;
}

}  // namespace
}  // namespace kvpool::tools
