#include "rpc/auth.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cstdlib>

#include "common/tenant_key.h"
#include "rpc/hmac.h"

namespace kvpool::rpc {

std::string MakeAuthNonce() {
  std::string nonce(kAuthNonceBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), static_cast<int>(nonce.size())) !=
      1) {
    std::fprintf(stderr, "kvpool: the OpenSSL random generator failed; refusing to continue\n");
    std::abort();
  }
  return nonce;
}

std::string AuthProof(std::string_view secret, std::string_view label,
                      std::string_view client_nonce, std::string_view server_nonce) {
  std::string message;
  message.reserve(label.size() + client_nonce.size() + server_nonce.size());
  message.append(label).append(client_nonce).append(server_nonce);
  return HmacKey(secret).MacString(message);
}

std::string DeriveTenantKey(std::string_view pool_secret, std::string_view tenant_id) {
  std::string mac = AuthProof(pool_secret, kTenantKeyLabel, NormalizeTenantId(tenant_id), {});
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(mac.size() * 2);
  for (unsigned char c : mac) {
    hex.push_back(kHex[c >> 4]);
    hex.push_back(kHex[c & 15]);
  }
  return hex;
}

bool ProofMatches(std::string_view expected, std::string_view got) {
  if (expected.size() != got.size() || expected.empty()) return false;
  return CRYPTO_memcmp(expected.data(), got.data(), expected.size()) == 0;
}

}  // namespace kvpool::rpc
