// The CLI's client commands: put, get, exists, rm, stat (--json: one JSON object), and
// client-options (the client option table as Markdown). Each prints a
// human-readable line and returns the process exit code (0 success, 1 failure with the reason on
// stderr, 2 bad usage: CLI11 parse errors, --timeout_ms outside 1..600000). SIGINT, SIGTERM or
// SIGHUP end a running command at once with 128 + the signal (tools/interrupt_watcher.h). put's
// FILE must be a regular file, not empty and not larger than the pool's capacity.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "rpc/security_options.h"

namespace kvpool::tools {

struct ClientCommandOptions {
  std::string master = "127.0.0.1:50051";  // --master host:port
  int timeout_ms = 5000;                   // --timeout_ms: deadline of each call (1..600000)
  std::string key;                         // KEY argument
  std::string path;                        // FILE argument
  bool force = false;                      // rm --force
  bool json = false;                       // stat --json
  rpc::SecurityOptions security;           // --auth_secret_file, --tls_* (docs/security.md)
  std::string tenant_id;                   // --tenant_id: the key namespace ("": default)
  std::string tenant_key_file;             // --tenant_key_file (else $KVPOOL_TENANT_KEY)
  // -o/--option KEY=VALUE: client options by table name (client/client_config.h), in order,
  // after the flags above.
  std::vector<std::string> client_options;
};

// Registers put/get/exists/rm/stat as subcommands of `app`; `exit_code` receives the result of
// whichever ran.
void AddClientCommands(CLI::App& app, ClientCommandOptions& options, int& exit_code);

}  // namespace kvpool::tools
