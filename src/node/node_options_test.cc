#include "node/node_options.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace kvpool::node {
namespace {

NodeOptions Parse(std::vector<std::string> args) {
  CLI::App app;
  NodeOptions o;
  AddNodeFlags(app, o);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);  // CLI11 takes the arguments back to front
  return o;
}

// The segment is faulted in before the node mounts it by default; bare --prefault (the old flag)
// still means true, and both spellings of false opt out.
TEST(NodeOptionsTest, PrefaultDefaultsOnAndTakesTrueFalseOrNothing) {
  EXPECT_TRUE(Parse({}).prefault);
  EXPECT_TRUE(Parse({"--prefault"}).prefault);
  EXPECT_TRUE(Parse({"--prefault", "--io_threads", "3"}).prefault);
  EXPECT_EQ(Parse({"--prefault", "--io_threads", "3"}).io_threads, 3);
  EXPECT_FALSE(Parse({"--prefault", "false"}).prefault);
  EXPECT_FALSE(Parse({"--prefault=false"}).prefault);
  EXPECT_TRUE(Parse({"--prefault", "true"}).prefault);
}

// Faulting in behind a node that already serves is asked for by name (issue 29: the first writes
// overtake it), and keeps --prefault on.
TEST(NodeOptionsTest, PrefaultInBackgroundIsOffByDefaultAndABareFlag) {
  EXPECT_FALSE(Parse({}).prefault_in_background);
  const NodeOptions o = Parse({"--prefault_in_background"});
  EXPECT_TRUE(o.prefault_in_background);
  EXPECT_TRUE(o.prefault);
  EXPECT_FALSE(Parse({"--prefault_in_background=false"}).prefault_in_background);
}

// The flags that are client settings write into the node's ClientOptions, under the node's
// names; their defaults are the client's but --host (detected) and --port (Mooncake's 50052).
TEST(NodeOptionsTest, ClientFlagsWriteIntoItsClientOptions) {
  const NodeOptions d = Parse({});
  EXPECT_EQ(d.client.local_hostname, "");
  EXPECT_EQ(d.client.segment_port, 50052);
  EXPECT_EQ(d.client.master_server_address, ClientOptions{}.master_server_address);
  EXPECT_EQ(d.client.rpc_timeout, ClientOptions{}.rpc_timeout);
  EXPECT_EQ(d.client.transfer_timeout, ClientOptions{}.transfer_timeout);
  EXPECT_EQ(d.client.heartbeat_interval, ClientOptions{}.heartbeat_interval);
  const NodeOptions o = Parse({"--host", "10.0.0.7", "--port", "50100", "--master_server_address",
                               "m:1", "--use_hugepage", "--disk_path", "/d", "--disk_queue_depth",
                               "8", "--disk_promote_after", "3", "--rpc_timeout_ms", "700",
                               "--transfer_timeout_ms", "800", "--heartbeat_interval_ms", "900"});
  EXPECT_EQ(o.client.local_hostname, "10.0.0.7");
  EXPECT_EQ(o.client.segment_port, 50100);
  EXPECT_EQ(o.client.master_server_address, "m:1");
  EXPECT_TRUE(o.client.use_hugepage);
  EXPECT_EQ(o.client.disk_path, "/d");
  EXPECT_EQ(o.client.disk_queue_depth, 8u);
  EXPECT_EQ(o.client.disk_promote_after, 3u);
  EXPECT_EQ(o.client.rpc_timeout, std::chrono::milliseconds(700));
  EXPECT_EQ(o.client.transfer_timeout, std::chrono::milliseconds(800));
  EXPECT_EQ(o.client.heartbeat_interval, std::chrono::milliseconds(900));
}

// The sizes are parsed into the client's byte counts, and the ranges still name the flags.
TEST(NodeOptionsTest, ValidationFillsSizesAndNamesTheFlag) {
  NodeOptions o = Parse({"--host", "127.0.0.1", "--master_server_address", "127.0.0.1:1",
                         "--global_segment_size", "64MB", "--disk_path", "/d", "--disk_size", "2MB",
                         "--enable_http_admin", "false"});
  ASSERT_TRUE(ValidateNodeOptions(o).ok());
  EXPECT_EQ(o.client.global_segment_size, 64u << 20);
  EXPECT_EQ(o.client.disk_size, 2u << 20);
  NodeOptions bad = Parse({"--host", "127.0.0.1", "--rpc_timeout_ms", "5"});
  Status st = ValidateNodeOptions(bad);
  EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(st.message().find("--rpc_timeout_ms=5"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace kvpool::node
