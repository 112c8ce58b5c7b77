// Shared-secret authentication of kvpool connections: HMAC-SHA256 challenge-response, mutual.
//
//   client -> HELLO  {client_nonce}                     32 random bytes
//   server -> reply  {server_nonce, server_proof}       proof = HMAC(secret, kServerLabel|cn|sn)
//   client checks server_proof (a server without the secret cannot produce it)
//   client -> AUTH   {client_proof}                     proof = HMAC(secret, kClientLabel|cn|sn)
//   server checks client_proof, answers Empty or closes with ILLEGAL_CLIENT
//
// The secret never travels; both nonces are fresh per connection, so a recorded exchange cannot
// be replayed, and the two labels keep one side's proof from being reflected as the other's.
// Comparisons are constant-time. Stateless functions, thread-safe.
//
// Tenants (docs/security.md): the pool secret is held by trusted components (nodes, operators);
// a tenant gets only its tenant key, HMAC-SHA256(pool secret, kTenantKeyLabel | tenant id) in
// lowercase hex, and runs the same exchange with it in place of the secret. The server derives
// the key from the tenant id the client names in HELLO, so a tenant key proves that one tenant.
#pragma once

#include <string>
#include <string_view>

namespace kvpool::rpc {

inline constexpr size_t kAuthNonceBytes = 32;
inline constexpr size_t kAuthProofBytes = 32;  // SHA-256
inline constexpr std::string_view kServerLabel = "kvpool server";
inline constexpr std::string_view kClientLabel = "kvpool client";
inline constexpr std::string_view kTenantKeyLabel = "kvpool tenant key";

// kAuthNonceBytes from the OpenSSL CSPRNG. Aborts the process if the generator fails (no
// connection should ever be authenticated with a predictable nonce).
std::string MakeAuthNonce();

// HMAC-SHA256(secret, label | client_nonce | server_nonce), kAuthProofBytes long.
std::string AuthProof(std::string_view secret, std::string_view label,
                      std::string_view client_nonce, std::string_view server_nonce);

// The tenant key of `tenant_id` (normalized: "default" and "" are the same tenant): 64 hex
// characters of HMAC-SHA256(pool_secret, kTenantKeyLabel | tenant_id).
std::string DeriveTenantKey(std::string_view pool_secret, std::string_view tenant_id);

// True when `got` equals `expected` (compared in constant time; lengths must match).
bool ProofMatches(std::string_view expected, std::string_view got);

}  // namespace kvpool::rpc
