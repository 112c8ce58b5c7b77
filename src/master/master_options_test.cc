#include "master/master_options.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <vector>

namespace kvpool::master {
namespace {

// Parses `args` (without the program name) into fresh options.
MasterOptions ParseArgs(const std::vector<std::string>& args) {
  CLI::App app("master");
  MasterOptions o;
  AddMasterFlags(app, o);
  std::vector<const char*> argv = {"kvpool-master"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return o;
}

TEST(MasterOptionsTest, DefaultsAreMooncakes) {
  MasterOptions o = ParseArgs({});
  EXPECT_EQ(o.rpc_host, "0.0.0.0");
  EXPECT_EQ(o.rpc_port, 50051);
  EXPECT_EQ(o.rpc_threads, 2);
  EXPECT_DOUBLE_EQ(o.eviction_high_watermark_ratio, 0.90);
  EXPECT_DOUBLE_EQ(o.eviction_ratio, 0.05);
  EXPECT_EQ(o.default_kv_lease_ttl, std::chrono::milliseconds(10000));
  EXPECT_EQ(o.client_ttl, std::chrono::seconds(10));
  EXPECT_EQ(o.put_start_discard_timeout_sec, std::chrono::seconds(30));
  EXPECT_EQ(o.put_start_release_timeout_sec, std::chrono::seconds(600));
  EXPECT_EQ(o.allocation_alignment, 64u);
  EXPECT_EQ(o.log_level, "info");
  EXPECT_TRUE(ValidateMasterOptions(o).ok());
}

TEST(MasterOptionsTest, FlagsUseMooncakeNames) {
  MasterOptions o = ParseArgs({"--rpc_port",
                               "6000",
                               "--rpc_address",
                               "127.0.0.1",
                               "--eviction_high_watermark_ratio",
                               "0.8",
                               "--eviction_ratio",
                               "0.1",
                               "--default_kv_lease_ttl",
                               "500",
                               "--client_ttl",
                               "3",
                               "--put_start_discard_timeout_sec",
                               "5",
                               "--put_start_release_timeout_sec",
                               "7",
                               "--log_level",
                               "debug",
                               "--allocation_alignment",
                               "4KiB",
                               "--rpc_thread_num",
                               "4"});
  EXPECT_EQ(o.rpc_port, 6000);
  EXPECT_EQ(o.rpc_host, "127.0.0.1");
  EXPECT_DOUBLE_EQ(o.eviction_high_watermark_ratio, 0.8);
  EXPECT_DOUBLE_EQ(o.eviction_ratio, 0.1);
  EXPECT_EQ(o.default_kv_lease_ttl, std::chrono::milliseconds(500));
  EXPECT_EQ(o.client_ttl, std::chrono::seconds(3));
  EXPECT_EQ(o.put_start_discard_timeout_sec, std::chrono::seconds(5));
  EXPECT_EQ(o.put_start_release_timeout_sec, std::chrono::seconds(7));
  EXPECT_EQ(o.log_level, "debug");
  EXPECT_EQ(o.allocation_alignment, 4096u);
  EXPECT_EQ(o.rpc_threads, 4);
  EXPECT_TRUE(ValidateMasterOptions(o).ok());
}

TEST(MasterOptionsTest, ConfigFileWithFlagOverride) {
  std::string path = ::testing::TempDir() + "/master_options_test.toml";
  {
    std::ofstream f(path);
    f << "rpc_port = 7000\neviction_ratio = 0.2\nclient_ttl = 20\nlog_level = \"warn\"\n";
  }
  MasterOptions o = ParseArgs({"--config", path, "--rpc_port", "7001"});
  EXPECT_EQ(o.rpc_port, 7001);  // the command line wins
  EXPECT_DOUBLE_EQ(o.eviction_ratio, 0.2);
  EXPECT_EQ(o.client_ttl, std::chrono::seconds(20));
  EXPECT_EQ(o.log_level, "warn");
  std::remove(path.c_str());
}

TEST(MasterOptionsTest, HttpAdminFlags) {
  MasterOptions d = ParseArgs({});
  EXPECT_TRUE(d.enable_http_admin);
  EXPECT_EQ(d.metrics_port, 9003);
  EXPECT_EQ(MetricsHostOf(d), "0.0.0.0");  // follows --rpc_host
  MasterOptions o = ParseArgs({"--metrics_port", "0", "--metrics_host", "127.0.0.1",
                               "--enable_http_admin", "false", "--rpc_host", "10.0.0.1"});
  EXPECT_EQ(o.metrics_port, 0);
  EXPECT_FALSE(o.enable_http_admin);
  EXPECT_EQ(MetricsHostOf(o), "127.0.0.1");
  EXPECT_TRUE(ValidateMasterOptions(o).ok());
  // Disabled, the port may be anything in range (it is not bound).
  o.metrics_port = o.rpc_port;
  EXPECT_TRUE(ValidateMasterOptions(o).ok());
}

TEST(MasterOptionsTest, BadAlignmentTextIsAParseError) {
  EXPECT_THROW(ParseArgs({"--allocation_alignment", "12%"}), CLI::ParseError);
}

// Each bad value is refused with INVALID_PARAMS naming the flag and the value.
TEST(MasterOptionsTest, ValidationNamesFlagValueAndRange) {
  struct Case {
    std::function<void(MasterOptions&)> set;
    std::string flag, value;
  };
  std::vector<Case> cases = {
      {[](auto& o) { o.rpc_port = 70000; }, "--rpc_port", "70000"},
      {[](auto& o) { o.rpc_threads = 0; }, "--rpc_thread_num", "0"},
      {[](auto& o) { o.eviction_high_watermark_ratio = 1.5; }, "--eviction_high_watermark_ratio",
       "1.5"},
      {[](auto& o) { o.eviction_high_watermark_ratio = 0; }, "--eviction_high_watermark_ratio",
       "0"},
      {[](auto& o) { o.eviction_ratio = -0.1; }, "--eviction_ratio", "-0.1"},
      {[](auto& o) { o.default_kv_lease_ttl = std::chrono::milliseconds(0); },
       "--default_kv_lease_ttl", "0"},
      {[](auto& o) { o.client_ttl = std::chrono::seconds(-1); }, "--client_ttl", "-1"},
      {[](auto& o) { o.put_start_discard_timeout_sec = std::chrono::seconds(0); },
       "--put_start_discard_timeout_sec", "0"},
      {[](auto& o) { o.put_start_release_timeout_sec = std::chrono::seconds(10); },
       "--put_start_release_timeout_sec", "10"},
      {[](auto& o) { o.allocation_alignment = 100; }, "--allocation_alignment", "100"},
      {[](auto& o) { o.log_level = "loud"; }, "--log_level", "loud"},
      {[](auto& o) { o.metrics_port = -1; }, "--metrics_port", "-1"},
      {[](auto& o) { o.metrics_port = o.rpc_port; }, "--metrics_port", "50051"},
  };
  for (const auto& c : cases) {
    MasterOptions o;
    c.set(o);
    Status st = ValidateMasterOptions(o);
    EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS) << c.flag;
    EXPECT_NE(st.message().find(c.flag + "=" + c.value), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("range"), std::string::npos) << st.message();
  }
}

// The --enable_ha flags (Mooncake's names) and their validation.
TEST(HaOptionsTest, MooncakeFlagNames) {
  MasterOptions o =
      ParseArgs({"--enable_ha", "true", "--etcd_endpoints", "10.0.0.1:2379;10.0.0.2:2379",
                 "--cluster_id", "prod", "--ha_backend_type", "etcd"});
  EXPECT_TRUE(o.enable_ha);
  EXPECT_EQ(o.etcd_endpoints, "10.0.0.1:2379;10.0.0.2:2379");
  EXPECT_EQ(o.cluster_id, "prod");
  EXPECT_EQ(o.ha_lease_ttl_sec, 3);
  EXPECT_TRUE(ValidateMasterOptions(o).ok());
  EXPECT_FALSE(ParseArgs({}).enable_ha);
  EXPECT_TRUE(ValidateMasterOptions(ParseArgs({})).ok());  // no etcd needed without HA
  for (const char* host : {"10.0.0.5", "::1", "master-1.example"}) {
    EXPECT_TRUE(ValidateMasterOptions(ParseArgs({"--enable_ha", "true", "--etcd_endpoints",
                                                 "h:2379", "--ha_advertise_host", host}))
                    .ok())
        << host;
  }
}

TEST(HaOptionsTest, BadValuesNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* flag;
  };
  std::vector<Case> cases = {
      {{"--enable_ha", "true"}, "--etcd_endpoints"},
      {{"--enable_ha", "true", "--etcd_endpoints", "h:2379;;"}, "--etcd_endpoints"},
      {{"--enable_ha", "true", "--etcd_endpoints", "h:2379", "--cluster_id", "a b"},
       "--cluster_id"},
      {{"--enable_ha", "true", "--etcd_endpoints", "h:2379", "--ha_backend_type", "redis"},
       "--ha_backend_type"},
      {{"--enable_ha", "true", "--etcd_endpoints", "h:2379", "--ha_lease_ttl_sec", "0"},
       "--ha_lease_ttl_sec"},
      {{"--enable_ha", "true", "--etcd_endpoints", "h:2379", "--ha_restore_wait_ms", "-1"},
       "--ha_restore_wait_ms"},
      {{"--enable_ha", "true", "--etcd_endpoints", "h:2379", "--ha_advertise_host", "[::1]"},
       "--ha_advertise_host"},
      {{"--enable_ha", "true", "--etcd_endpoints", "h:2379", "--ha_advertise_host", "a b"},
       "--ha_advertise_host"},
  };
  for (const Case& c : cases) {
    Status st = ValidateMasterOptions(ParseArgs(c.args));
    EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS) << c.flag;
    EXPECT_NE(st.message().find(c.flag), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace kvpool::master
