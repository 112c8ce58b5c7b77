// `kvpool tenant-key --tenant ID [--out FILE]`: prints the tenant key of tenant ID (rpc/auth.h),
// derived from the pool secret (--auth_secret_file or $KVPOOL_AUTH_SECRET), for an operator to
// hand to that tenant. With --out the key is written to FILE (created with mode 0600, replaced
// if it exists) instead of stdout. Exit codes: 0 done; 1 no pool secret, or FILE cannot be
// written (the reason on stderr); 2 bad flags.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "rpc/security_options.h"

namespace kvpool::tools {

struct TenantKeyCommandOptions {
  std::string tenant;             // --tenant (required; "default" is the default tenant)
  std::string out;                // --out FILE ("": stdout)
  rpc::SecurityOptions security;  // --auth_secret_file
};

// Registers `tenant-key` on `app`; `exit_code` receives its result. `o` must outlive parse().
void AddTenantKeyCommand(CLI::App& app, TenantKeyCommandOptions& o, int& exit_code);

}  // namespace kvpool::tools
