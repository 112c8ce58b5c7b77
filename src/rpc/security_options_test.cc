// The security flags: where the secret comes from, and the settings that are refused.
#include "rpc/security_options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>

namespace kvpool::rpc {
namespace {

class SecurityOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kvpool_secopt_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    unsetenv(kAuthSecretEnv);
  }
  void TearDown() override {
    unsetenv(kAuthSecretEnv);
    std::filesystem::remove_all(dir_);
  }
  std::string Write(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::string dir_;
};

TEST_F(SecurityOptionsTest, SecretOnTheCommandLineIsRefused) {
  CLI::App app;
  SecurityOptions o;
  AddSecurityFlags(app, o, /*server=*/true);
  const char* argv[] = {"kvpool", "--auth_secret=hunter2"};
  try {
    app.parse(2, argv);
    FAIL() << "--auth_secret was accepted";
  } catch (const CLI::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("--auth_secret_file"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(o.auth_secret.empty());
}

TEST_F(SecurityOptionsTest, SecretFromFileWithoutTrailingNewline) {
  SecurityOptions o;
  o.auth_secret_file = Write("s", "abc def\n");
  setenv(kAuthSecretEnv, "from-env", 1);  // the file wins
  ASSERT_TRUE(ResolveAuthSecret(o).ok());
  EXPECT_EQ(o.auth_secret, "abc def");
}

TEST_F(SecurityOptionsTest, SecretFromEnvironmentOrNone) {
  SecurityOptions none;
  ASSERT_TRUE(ResolveAuthSecret(none).ok());
  EXPECT_TRUE(none.auth_secret.empty());
  setenv(kAuthSecretEnv, "from-env", 1);
  SecurityOptions env;
  ASSERT_TRUE(ResolveAuthSecret(env).ok());
  EXPECT_EQ(env.auth_secret, "from-env");
}

TEST_F(SecurityOptionsTest, MissingOrEmptySecretFileIsAnError) {
  SecurityOptions missing;
  missing.auth_secret_file = dir_ + "/nope";
  EXPECT_EQ(ResolveAuthSecret(missing).code(), ErrorCode::FILE_NOT_FOUND);
  SecurityOptions empty;
  empty.auth_secret_file = Write("empty", "\n");
  EXPECT_EQ(ResolveAuthSecret(empty).code(), ErrorCode::INVALID_PARAMS);
}

TEST_F(SecurityOptionsTest, IncompleteTlsSettingsAreRefused) {
  std::string pem = Write("x.pem", "x");
  SecurityOptions key_only;
  key_only.tls_key = pem;
  EXPECT_EQ(ValidateTls(key_only, false).code(), ErrorCode::INVALID_PARAMS);
  SecurityOptions verify_without_ca;
  verify_without_ca.tls_cert = verify_without_ca.tls_key = pem;
  verify_without_ca.tls_verify_client = true;
  EXPECT_EQ(ValidateTls(verify_without_ca, false).code(), ErrorCode::INVALID_PARAMS);
  SecurityOptions node_without_ca;
  node_without_ca.tls_cert = node_without_ca.tls_key = pem;
  EXPECT_TRUE(ValidateTls(node_without_ca, /*also_client=*/false).ok());
  EXPECT_EQ(ValidateTls(node_without_ca, /*also_client=*/true).code(), ErrorCode::INVALID_PARAMS);
  SecurityOptions missing_file;
  missing_file.tls_ca = dir_ + "/nope.pem";
  EXPECT_EQ(ValidateTls(missing_file, false).code(), ErrorCode::FILE_NOT_FOUND);
}

}  // namespace
}  // namespace kvpool::rpc
