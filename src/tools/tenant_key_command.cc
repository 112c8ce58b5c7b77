#include "tools/tenant_key_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "common/tenant_key.h"
#include "rpc/auth.h"

namespace kvpool::tools {
namespace {

Status WriteKeyFile(const std::string& path, const std::string& text) {
  ::unlink(path.c_str());  // a new file, so the mode below holds even if one existed
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status(ErrorCode::FILE_OPEN_FAIL,
                  fmt::format("--out={}: cannot create: {}", path, std::strerror(errno)));
  }
  ssize_t n = ::write(fd, text.data(), text.size());
  bool ok = n == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return Status(ErrorCode::FILE_WRITE_FAIL, fmt::format("--out={}: write failed", path));
  return Status::Ok();
}

int Run(TenantKeyCommandOptions& o) {
  auto fail = [](const Status& st) {
    std::cerr << "kvpool tenant-key: " << st.ToString() << "\n";
    return 1;
  };
  if (Status st = ValidateTenantId(o.tenant); !st.ok()) return fail(st);
  if (Status st = rpc::ResolveAuthSecret(o.security); !st.ok()) return fail(st);
  if (o.security.auth_secret.empty()) {
    return fail(Status(ErrorCode::INVALID_PARAMS,
                       fmt::format("no pool secret: pass --auth_secret_file FILE or set ${}",
                                   rpc::kAuthSecretEnv)));
  }
  std::string key = rpc::DeriveTenantKey(o.security.auth_secret, o.tenant) + "\n";
  if (o.out.empty()) {
    std::cout << key;
    return 0;
  }
  if (Status st = WriteKeyFile(o.out, key); !st.ok()) return fail(st);
  return 0;
}

}  // namespace

void AddTenantKeyCommand(CLI::App& app, TenantKeyCommandOptions& o, int& exit_code) {
  auto* cmd = app.add_subcommand("tenant-key",
                                 "Print the tenant key of --tenant, derived from the pool secret");
  cmd->add_option("--tenant", o.tenant, "Tenant id")->required();
  cmd->add_option("--out", o.out, "Write the key to this file (mode 0600) instead of stdout");
  cmd->add_option("--auth_secret_file", o.security.auth_secret_file,
                  fmt::format("File holding the pool secret (default: ${})", rpc::kAuthSecretEnv));
  cmd->callback([&] { exit_code = Run(o); });
}

}  // namespace kvpool::tools
