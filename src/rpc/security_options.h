// Security settings shared by every role (master, node, client commands, bench): the shared
// secret for authentication (rpc/auth.h) and the TLS files. One plain struct, filled from flags
// by AddSecurityFlags and completed by ResolveAuthSecret; see docs/security.md.
#pragma once

#include <optional>
#include <string>

#include "kvpool/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace kvpool::rpc {

// Environment variable holding the shared secret when no file is given.
inline constexpr const char* kAuthSecretEnv = "KVPOOL_AUTH_SECRET";

struct SecurityOptions {
  // File whose contents (trailing newlines dropped) are the shared secret. Flag
  // --auth_secret_file. Default "": the secret comes from $KVPOOL_AUTH_SECRET, else none.
  std::string auth_secret_file;
  // The secret itself, filled by ResolveAuthSecret (never a flag: command lines are visible to
  // every user of the host). Empty: connections are not authenticated.
  std::string auth_secret;
  // PEM certificate chain and private key this process presents: a server's identity, and a
  // client's certificate for mutual TLS. Flags --tls_cert, --tls_key. Default "" (TLS off).
  std::string tls_cert;
  std::string tls_key;
  // PEM CA bundle. A client verifies servers against it (TLS is on for outgoing connections
  // exactly when this is set); a server with --tls_verify_client verifies client certificates
  // against it. Flag --tls_ca. Default "".
  std::string tls_ca;
  // Servers only: require and verify a client certificate (mutual TLS). Flag
  // --tls_verify_client (true/false). Default false.
  bool tls_verify_client = false;
  // Servers only: accept unauthenticated peers from other hosts when no secret is set (protected
  // mode off; rpc/server.h). Flag --insecure. Default false.
  bool insecure = false;

  bool tls_server() const { return !tls_cert.empty(); }
  bool tls_client() const { return !tls_ca.empty(); }
};

// Registers --auth_secret_file, --tls_cert, --tls_key, --tls_ca (and --tls_verify_client and
// --insecure when `server`) on `app`, writing into `o`, plus an --auth_secret that is always
// refused with a message pointing at the file and the environment variable.
void AddSecurityFlags(CLI::App& app, SecurityOptions& o, bool server);

// Fills o.auth_secret: from o.auth_secret_file when set, else from `from_env` (a server's
// $KVPOOL_AUTH_SECRET when not given; a client passes what its option table read) when set,
// else leaves it empty. Trailing "\n"/"\r\n" are dropped (files written by `echo`).
// Errors: FILE_NOT_FOUND / FILE_READ_FAIL naming the file; INVALID_PARAMS for an empty secret
// from an explicitly named file.
Status ResolveAuthSecret(SecurityOptions& o);
Status ResolveAuthSecret(SecurityOptions& o, std::optional<std::string> from_env);

// A secret from `file` (trailing newlines dropped) when it is set, else `from_env` (an
// environment variable's value as the caller read it) when set, else "". `flag` names the
// file's option in errors: FILE_NOT_FOUND / FILE_READ_FAIL, INVALID_PARAMS for an empty file.
Result<std::string> ReadSecret(const std::string& file, std::optional<std::string> from_env,
                               const char* flag);

// INVALID_PARAMS naming the flag when the TLS settings are incomplete: a key without a cert (or
// the reverse), --tls_verify_client without --tls_ca, or (`also_client`: a node or embedded
// client that serves and connects) a server certificate without --tls_ca to verify its peers.
// Also checks that every named file is readable (FILE_NOT_FOUND naming it).
Status ValidateTls(const SecurityOptions& o, bool also_client);

}  // namespace kvpool::rpc
