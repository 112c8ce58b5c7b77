#include "rpc/hmac.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace kvpool::rpc {
namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "kvpool: OpenSSL HMAC-SHA256 failed (%s); refusing to continue\n", what);
  std::abort();
}

}  // namespace

HmacKey::HmacKey(std::string_view secret) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (mac == nullptr) Fail("fetch");
  prepared_ = EVP_MAC_CTX_new(mac);
  EVP_MAC_free(mac);  // the context keeps its own reference
  if (prepared_ == nullptr) Fail("new context");
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  // A zero-length key is legal HMAC; OpenSSL wants a non-null pointer for it.
  static const unsigned char kNoKey = 0;
  const auto* key =
      secret.empty() ? &kNoKey : reinterpret_cast<const unsigned char*>(secret.data());
  if (EVP_MAC_init(prepared_, key, secret.size(), params) != 1) Fail("init");
}

HmacKey::~HmacKey() { EVP_MAC_CTX_free(prepared_); }

HmacKey::HmacKey(HmacKey&& other) noexcept : prepared_(std::exchange(other.prepared_, nullptr)) {}

HmacKey& HmacKey::operator=(HmacKey&& other) noexcept {
  if (this != &other) {
    EVP_MAC_CTX_free(prepared_);
    prepared_ = std::exchange(other.prepared_, nullptr);
  }
  return *this;
}

HmacDigest HmacKey::Mac(std::string_view message) const {
  if (prepared_ == nullptr) Fail("use of a moved-from key");
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_dup(prepared_);
  if (ctx == nullptr) Fail("copy");
  HmacDigest out{};
  size_t len = 0;
  bool ok = EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(message.data()),
                           message.size()) == 1 &&
            EVP_MAC_final(ctx, out.data(), &len, out.size()) == 1 && len == out.size();
  EVP_MAC_CTX_free(ctx);
  if (!ok) Fail("update");
  return out;
}

std::string HmacKey::MacString(std::string_view message) const {
  HmacDigest d = Mac(message);
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

}  // namespace kvpool::rpc
