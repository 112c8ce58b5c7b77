// A test fixture base for pools that run with a pool secret: a private directory holding the
// secret file (mode 0600) and the tenant keys made from it, a Pool whose master, node and
// default clients all prove the secret, and `kvpool tenant-key` to make tenant keys.
// The directory is removed at TearDown.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "pool.h"

namespace kvpool::testing {

class SecuredPoolTest : public ::testing::Test {
 protected:
  static constexpr size_t kPage = 64 << 10;  // the object size the tenant tests use

  void SetUp() override {
    char tmpl[] = "/tmp/kvpool_secured_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    secret_file_ = dir_ + "/secret";
    std::ofstream(secret_file_) << secret_ << "\n";
    ::chmod(secret_file_.c_str(), 0600);
  }
  void TearDown() override {
    pool_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // A master with `master_flags` and one 64 MB node, both with the pool secret; the pool's
  // default clients prove it too.
  void StartPool(std::vector<std::string> master_flags = {}) {
    master_flags.insert(master_flags.end(), {"--auth_secret_file", secret_file_});
    pool_ = std::make_unique<Pool>(master_flags);
    ClientOptions pool_secret;
    pool_secret.auth_secret_file = secret_file_;
    pool_->SetClientSecurity(pool_secret);
    pool_->AddNode("64MB", {"--auth_secret_file", secret_file_});
  }

  // `kvpool tenant-key --tenant T --out FILE` (checked: exit 0, file mode 0600); returns FILE.
  std::string TenantKeyFile(const std::string& tenant) {
    std::string path = dir_ + "/key-" + tenant;
    RunResult r = RunCommand(kBinary, {"tenant-key", "--tenant", tenant, "--auth_secret_file",
                                       secret_file_, "--out", path});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    return path;
  }
  // The tenant key of `tenant` itself (what TenantKeyFile holds).
  std::string TenantKey(const std::string& tenant) {
    std::string key;
    std::ifstream(TenantKeyFile(tenant)) >> key;
    return key;
  }

  const std::string secret_ = "secured-pool-test-secret";
  std::string dir_;
  std::string secret_file_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace kvpool::testing
