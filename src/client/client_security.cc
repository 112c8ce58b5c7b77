#include "client/client_security.h"

#include <fmt/format.h>

#include "client/client_config.h"
#include "common/tenant_key.h"

namespace kvpool::client {
namespace {

// The tenant id and, when one is configured, the tenant key in place of the pool secret.
Status ResolveTenant(const ClientOptions& options, rpc::ConnectOptions& connect) {
  KVPOOL_RETURN_IF_ERROR(ValidateTenantId(options.tenant_id));
  connect.tenant_id = options.tenant_id;
  std::string key = options.tenant_key;
  if (key.empty()) {
    // tenant_key_file, else its environment variable, else tenant_key's (the option table's
    // $KVPOOL_TENANT_KEY_FILE and $KVPOOL_TENANT_KEY).
    std::string file = options.tenant_key_file;
    if (file.empty()) file = ClientOptionFromEnv("tenant_key_file").value_or("");
    auto read = rpc::ReadSecret(file, ClientOptionFromEnv("tenant_key"), "tenant_key_file");
    if (!read.ok()) return read.status();
    key = std::move(read).value();
  }
  if (key.empty()) return Status::Ok();
  if (options.global_segment_size > 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("tenant '{}': a client with a tenant key cannot contribute memory "
                              "(global_segment_size={}): a segment holds every tenant's objects. "
                              "Set global_segment_size to 0, or use standalone mode",
                              options.tenant_id, options.global_segment_size));
  }
  connect.auth_secret = std::move(key);
  connect.tenant_key = true;
  return Status::Ok();
}

}  // namespace

Result<ClientSecurity> ResolveClientSecurity(const ClientOptions& options) {
  ClientSecurity out;
  rpc::SecurityOptions& s = out.server;
  s.auth_secret = options.auth_secret;
  s.auth_secret_file = options.auth_secret_file;
  s.tls_ca = options.tls_ca_file;
  s.tls_cert = options.tls_cert_file;
  s.tls_key = options.tls_key_file;
  s.tls_verify_client = options.tls_verify_client;
  if (s.auth_secret.empty()) {
    KVPOOL_RETURN_IF_ERROR(rpc::ResolveAuthSecret(s, ClientOptionFromEnv("auth_secret")));
  }
  KVPOOL_RETURN_IF_ERROR(rpc::ValidateTls(s, /*also_client=*/options.global_segment_size > 0));
  out.connect.auth_secret = s.auth_secret;
  out.connect.reply_spin = std::chrono::microseconds(options.reply_spin_us);
  out.connect.zero_copy_min_bytes = options.zero_copy_send_min_bytes;
  KVPOOL_RETURN_IF_ERROR(ResolveTenant(options, out.connect));
  if (s.tls_client()) {
    auto tls = rpc::TlsClientContext::Create(s);
    if (!tls.ok()) return tls.status();
    out.connect.tls = std::move(tls).value();
  }
  return out;
}

void ApplySecurityFlags(const rpc::SecurityOptions& flags, ClientOptions& options) {
  options.auth_secret = flags.auth_secret;
  options.auth_secret_file = flags.auth_secret_file;
  options.tls_ca_file = flags.tls_ca;
  options.tls_cert_file = flags.tls_cert;
  options.tls_key_file = flags.tls_key;
  options.tls_verify_client = flags.tls_verify_client;
  options.insecure = flags.insecure;
}

}  // namespace kvpool::client
