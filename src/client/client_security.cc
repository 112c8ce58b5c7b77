#include "client/client_security.h"

namespace kvpool::client {

Result<ClientSecurity> ResolveClientSecurity(const ClientOptions& options) {
  ClientSecurity out;
  rpc::SecurityOptions& s = out.server;
  s.auth_secret = options.auth_secret;
  s.auth_secret_file = options.auth_secret_file;
  s.tls_ca = options.tls_ca_file;
  s.tls_cert = options.tls_cert_file;
  s.tls_key = options.tls_key_file;
  s.tls_verify_client = options.tls_verify_client;
  if (s.auth_secret.empty()) KVPOOL_RETURN_IF_ERROR(rpc::ResolveAuthSecret(s));
  KVPOOL_RETURN_IF_ERROR(rpc::ValidateTls(s, /*also_client=*/options.global_segment_size > 0));
  out.connect.auth_secret = s.auth_secret;
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
}

}  // namespace kvpool::client
