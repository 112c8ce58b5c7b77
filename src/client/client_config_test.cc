#include "client/client_config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

namespace kvpool {
namespace {

// An environment of `env`'s variables (read at each lookup, so a test may change them).
EnvLookup MapLookup(const std::map<std::string, std::string>& env) {
  return [&env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ClientConfig, NamesAndAliasesAreUnique) {
  std::set<std::string_view> seen;
  for (const ClientOptionDescriptor& d : ClientOptionTable()) {
    EXPECT_TRUE(seen.insert(d.name).second) << d.name;
    for (std::string_view a : d.aliases) EXPECT_TRUE(seen.insert(a).second) << a;
    EXPECT_FALSE(d.doc.empty()) << d.name;
  }
}

TEST(ClientConfig, DefaultsComeFromClientOptions) {
  EXPECT_EQ(ClientOptionDefault(*FindClientOption("master_server_address")), "127.0.0.1:50051");
  EXPECT_EQ(ClientOptionDefault(*FindClientOption("rpc_timeout_ms")), "5000");
  EXPECT_EQ(ClientOptionDefault(*FindClientOption("prefault_segment_in_background")), "true");
  // Applying every default to a fresh value leaves it equal to the defaults.
  ClientOptions o;
  for (const ClientOptionDescriptor& d : ClientOptionTable()) {
    ASSERT_TRUE(ApplyClientOption(d.name, ClientOptionDefault(d), o).ok()) << d.name;
    EXPECT_EQ(d.get(o), ClientOptionDefault(d)) << d.name;
  }
}

TEST(ClientConfig, EveryFieldIsReachableByName) {
  ClientOptions o;
  std::map<std::string_view, std::string> values = {{"string", "x"},       {"bool", "true"},
                                                    {"size", "4096"},      {"count", "7"},
                                                    {"duration-ms", "17"}, {"port", "4242"}};
  for (const ClientOptionDescriptor& d : ClientOptionTable()) {
    ASSERT_TRUE(ApplyClientOption(d.name, values[OptionKindName(d.kind)], o).ok()) << d.name;
  }
  EXPECT_EQ(o.master_server_address, "x");
  EXPECT_EQ(o.local_hostname, "x");
  EXPECT_EQ(o.global_segment_size, 4096U);
  EXPECT_EQ(o.segment_port, 4242);
  EXPECT_TRUE(o.use_hugepage);
  EXPECT_EQ(o.disk_path, "x");
  EXPECT_EQ(o.disk_size, 4096U);
  EXPECT_EQ(o.disk_queue_depth, 7U);
  EXPECT_EQ(o.disk_promote_after, 7U);
  EXPECT_EQ(o.protocol, "x");
  EXPECT_EQ(o.rpc_timeout.count(), 17);
  EXPECT_EQ(o.transfer_timeout.count(), 17);
  EXPECT_EQ(o.heartbeat_interval.count(), 17);
  EXPECT_TRUE(o.prefault_segment);
  EXPECT_TRUE(o.prefault_segment_in_background);
  EXPECT_TRUE(o.verify_checksum);
  EXPECT_EQ(o.auth_secret, "x");
  EXPECT_EQ(o.auth_secret_file, "x");
  EXPECT_EQ(o.tls_ca_file, "x");
  EXPECT_EQ(o.tls_cert_file, "x");
  EXPECT_EQ(o.tls_key_file, "x");
  EXPECT_TRUE(o.tls_verify_client);
  EXPECT_EQ(o.tenant_id, "x");
  EXPECT_EQ(o.tenant_key, "x");
  EXPECT_EQ(o.tenant_key_file, "x");
}

TEST(ClientConfig, MooncakeAliases) {
  ClientOptions o;
  ASSERT_TRUE(ApplyClientOption("master_server_addr", "m:1", o).ok());
  EXPECT_EQ(o.master_server_address, "m:1");
}

TEST(ClientConfig, SizesWithUnits) {
  ClientOptions o;
  ASSERT_TRUE(ApplyClientOption("global_segment_size", "4gb", o).ok());
  EXPECT_EQ(o.global_segment_size, 4ULL << 30);
  ASSERT_TRUE(ApplyClientOption("disk_size", "512 MiB", o).ok());
  EXPECT_EQ(o.disk_size, 512ULL << 20);
}

TEST(ClientConfig, BadValuesNameTheKey) {
  ClientOptions o;
  for (auto [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"global_segment_size", "4xb"},
                                                        {"segment_port", "70000"},
                                                        {"rpc_timeout_ms", "0"},
                                                        {"rpc_timeout_ms", "-5"},
                                                        {"verify_checksum", "maybe"},
                                                        {"disk_queue_depth", "many"},
                                                        {"reply_spin_us", "10001"}}) {
    Status st = ApplyClientOption(key, value, o);
    EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS) << key;
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(value), std::string::npos) << st.message();
  }
  EXPECT_EQ(o.rpc_timeout.count(), 5000);  // untouched
}

TEST(ClientConfig, ReplySpinIsCappedAsTheMastersPollIs) {
  ClientOptions o;
  ASSERT_TRUE(ApplyClientOption("reply_spin_us", "10000", o).ok());
  EXPECT_EQ(o.reply_spin_us, 10000);
  Status st = ApplyClientOption("reply_spin_us", "65535", o);
  EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(st.message().find("from 0 to 10000"), std::string::npos) << st.message();
  EXPECT_EQ(o.reply_spin_us, 10000);
}

TEST(ClientConfig, UnknownKeySuggestsClosest) {
  ClientOptions o;
  Status st = ApplyClientOption("global_segmen_size", "1", o);
  EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(st.message().find("'global_segment_size'"), std::string::npos) << st.message();
}

TEST(ClientConfig, ClosestConsidersTheCallersExtraKeys) {
  const std::string_view extra[] = {"ssd_offload_path"};
  EXPECT_EQ(ClosestClientOption("ssd_ofload_path", extra), "ssd_offload_path");
  EXPECT_EQ(ClosestClientOption("master_server_adress", extra), "master_server_address");
}

TEST(ClientConfig, EnvironmentThroughInjectedLookup) {
  std::map<std::string, std::string> env = {{"MOONCAKE_MASTER", "etcd://e:2379"},
                                            {"LOCAL_HOSTNAME", "h2"},
                                            {"MOONCAKE_GLOBAL_SEGMENT_SIZE", "1gb"},
                                            {"KVPOOL_VERIFY_CHECKSUM", "1"},
                                            {"MOONCAKE_TENANT_ID", ""}};
  EnvLookup lookup = MapLookup(env);
  ClientOptions o;
  o.tenant_id = "kept";
  ASSERT_TRUE(ApplyClientEnvironment(o, lookup).ok());
  EXPECT_EQ(o.master_server_address, "etcd://e:2379");
  EXPECT_EQ(o.local_hostname, "h2");
  EXPECT_EQ(o.global_segment_size, 1ULL << 30);
  EXPECT_TRUE(o.verify_checksum);
  EXPECT_EQ(o.tenant_id, "kept");  // empty variables are ignored

  env["MOONCAKE_LOCAL_HOSTNAME"] = "h1";  // the first variable listed wins
  ASSERT_TRUE(ApplyClientEnvironment(o, lookup).ok());
  EXPECT_EQ(o.local_hostname, "h1");

  env["MOONCAKE_GLOBAL_SEGMENT_SIZE"] = "lots";
  Status st = ApplyClientEnvironment(o, lookup);
  EXPECT_EQ(st.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(st.message().find("MOONCAKE_GLOBAL_SEGMENT_SIZE"), std::string::npos);
  EXPECT_NE(st.message().find("global_segment_size"), std::string::npos);
}

TEST(ClientConfig, OneOptionFromItsEnvironmentVariables) {
  std::map<std::string, std::string> env = {{"LOCAL_HOSTNAME", "h2"}, {"KVPOOL_TENANT_KEY", ""}};
  EnvLookup lookup = MapLookup(env);
  EXPECT_EQ(ClientOptionFromEnv("local_hostname", lookup), "h2");
  env["MOONCAKE_LOCAL_HOSTNAME"] = "h1";  // the first variable listed wins
  EXPECT_EQ(ClientOptionFromEnv("local_hostname", lookup), "h1");
  EXPECT_EQ(ClientOptionFromEnv("tenant_key", lookup), std::nullopt);    // set but empty
  EXPECT_EQ(ClientOptionFromEnv("segment_port", lookup), std::nullopt);  // has no variable
  EXPECT_EQ(ClientOptionFromEnv("no_such_option", lookup), std::nullopt);
}

// setup()'s SSD-offload directory is no ClientOptions field but comes from the environment
// through the same reader.
TEST(ClientConfig, SetupSettingFromItsEnvironmentVariable) {
  std::map<std::string, std::string> env;
  EnvLookup lookup = MapLookup(env);
  EXPECT_EQ(SetupSettingFromEnv("ssd_offload_path", lookup), std::nullopt);
  env["MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"] = "";
  EXPECT_EQ(SetupSettingFromEnv("ssd_offload_path", lookup), std::nullopt);  // set but empty
  env["MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"] = "/ssd";
  EXPECT_EQ(SetupSettingFromEnv("ssd_offload_path", lookup), "/ssd");
  EXPECT_EQ(SetupSettingFromEnv("master_server_address", lookup), std::nullopt);
}

TEST(ClientConfig, MarkdownHasARowPerOption) {
  std::string md = ClientOptionsMarkdown();
  for (const ClientOptionDescriptor& d : ClientOptionTable()) {
    EXPECT_NE(md.find(fmt::format("| `{}` |", d.name)), std::string::npos) << d.name;
  }
  EXPECT_NE(md.find("| `rpc_timeout_ms` | `rpc_timeout` | duration-ms | `5000` |"),
            std::string::npos)
      << md;
}

}  // namespace
}  // namespace kvpool
