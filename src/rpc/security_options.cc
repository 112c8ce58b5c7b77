#include "rpc/security_options.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/env.h"

namespace kvpool::rpc {
namespace {

Status CheckReadable(const std::string& path, const char* flag) {
  if (path.empty()) return Status::Ok();
  if (::access(path.c_str(), R_OK) != 0) {
    return Status(ErrorCode::FILE_NOT_FOUND,
                  fmt::format("--{}={}: file not found or not readable", flag, path));
  }
  return Status::Ok();
}

void DropTrailingNewlines(std::string& s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
}

}  // namespace

void AddSecurityFlags(CLI::App& app, SecurityOptions& o, bool server) {
  app.add_option("--auth_secret_file", o.auth_secret_file,
                 fmt::format("file holding the shared secret (default: ${})", kAuthSecretEnv));
  app.add_option_function<std::string>(
      "--auth_secret",
      [](const std::string&) {
        throw CLI::ValidationError(
            "--auth_secret",
            fmt::format("a secret on the command line is visible to every user of the host "
                        "(ps, /proc); put it in a file readable only by you and pass "
                        "--auth_secret_file FILE, or set ${}",
                        kAuthSecretEnv));
      },
      "refused: use --auth_secret_file or $KVPOOL_AUTH_SECRET");
  app.add_option("--tls_cert", o.tls_cert, "PEM certificate chain this process presents");
  app.add_option("--tls_key", o.tls_key, "PEM private key of --tls_cert");
  app.add_option("--tls_ca", o.tls_ca,
                 server ? "PEM CA bundle: verifies client certificates and, when this process "
                          "connects, servers"
                        : "PEM CA bundle that verifies servers (turns TLS on)");
  if (server) {
    app.add_option("--tls_verify_client", o.tls_verify_client,
                   "require a client certificate signed by --tls_ca (true/false)")
        ->capture_default_str();
    app.add_flag("--insecure", o.insecure,
                 "without a secret, serve peers from other hosts too (protected mode off; "
                 "docs/security.md)");
  }
}

Result<std::string> ReadSecret(const std::string& file, std::optional<std::string> from_env,
                               const char* flag) {
  std::string secret;
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      return Status(ErrorCode::FILE_NOT_FOUND, fmt::format("--{}={}: cannot open", flag, file));
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
      return Status(ErrorCode::FILE_READ_FAIL, fmt::format("--{}={}: read failed", flag, file));
    }
    secret = text.str();
    DropTrailingNewlines(secret);
    if (secret.empty()) {
      return Status(ErrorCode::INVALID_PARAMS, fmt::format("--{}={} is empty", flag, file));
    }
    return secret;
  }
  if (from_env) {
    secret = std::move(*from_env);
    DropTrailingNewlines(secret);
  }
  return secret;
}

Status ResolveAuthSecret(SecurityOptions& o) {
  return ResolveAuthSecret(o, GetEnv(kAuthSecretEnv));
}

Status ResolveAuthSecret(SecurityOptions& o, std::optional<std::string> from_env) {
  auto secret = ReadSecret(o.auth_secret_file, std::move(from_env), "auth_secret_file");
  if (!secret.ok()) return secret.status();
  o.auth_secret = std::move(secret).value();
  return Status::Ok();
}

Status ValidateTls(const SecurityOptions& o, bool also_client) {
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "--tls_cert and --tls_key go together: set both or neither");
  }
  if (o.tls_verify_client && o.tls_ca.empty()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "--tls_verify_client needs --tls_ca (the CA that signs client certificates)");
  }
  if (also_client && o.tls_server() && !o.tls_client()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "--tls_cert on a process that also connects (node, embedded client) needs "
                  "--tls_ca to verify the master and peer nodes");
  }
  KVPOOL_RETURN_IF_ERROR(CheckReadable(o.tls_cert, "tls_cert"));
  KVPOOL_RETURN_IF_ERROR(CheckReadable(o.tls_key, "tls_key"));
  KVPOOL_RETURN_IF_ERROR(CheckReadable(o.tls_ca, "tls_ca"));
  return Status::Ok();
}

}  // namespace kvpool::rpc
