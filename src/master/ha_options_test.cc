// The --enable_ha flags (Mooncake's names) and their validation.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <vector>

#include "master/master_options.h"

namespace kvpool::master {
namespace {

MasterOptions ParseHaArgs(std::vector<std::string> args) {
  CLI::App app("master");
  MasterOptions o;
  AddMasterFlags(app, o);
  std::vector<const char*> argv = {"kvpool-master"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return o;
}

TEST(HaOptionsTest, MooncakeFlagNames) {
  MasterOptions o =
      ParseHaArgs({"--enable_ha", "true", "--etcd_endpoints", "10.0.0.1:2379;10.0.0.2:2379",
                   "--cluster_id", "prod", "--ha_backend_type", "etcd"});
  EXPECT_TRUE(o.enable_ha);
  EXPECT_EQ(o.etcd_endpoints, "10.0.0.1:2379;10.0.0.2:2379");
  EXPECT_EQ(o.cluster_id, "prod");
  EXPECT_EQ(o.ha_lease_ttl_sec, 3);
  EXPECT_TRUE(ValidateMasterOptions(o).ok());
  EXPECT_FALSE(ParseHaArgs({}).enable_ha);
  EXPECT_TRUE(ValidateMasterOptions(ParseHaArgs({})).ok());  // no etcd needed without HA
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
  };
  for (const Case& c : cases) {
    Status st = ValidateMasterOptions(ParseHaArgs(c.args));
    EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS) << c.flag;
    EXPECT_NE(st.message().find(c.flag), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace kvpool::master
