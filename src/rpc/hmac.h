// HMAC-SHA256 with a key prepared once: kvpool's one HMAC, for the handshake proofs and tenant
// keys (rpc/auth.h) and for many MACs under one secret (the data-plane grants, rpc/grant.h).
//
// Preparing the key (OpenSSL's algorithm fetch and key schedule) costs a few microseconds;
// each Mac() after that copies the prepared state and costs about 1 µs for a short message.
// Thread-safe: Mac() only reads the prepared state, so one HmacKey serves many threads.
// Movable, not copyable.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

struct evp_mac_ctx_st;

namespace kvpool::rpc {

inline constexpr size_t kHmacBytes = 32;  // SHA-256
using HmacDigest = std::array<uint8_t, kHmacBytes>;

class HmacKey {
 public:
  // An empty `secret` is a valid (if useless) key; callers decide whether to use it. Aborts the
  // process if OpenSSL cannot provide HMAC-SHA256 (a broken installation: nothing could be
  // authenticated).
  explicit HmacKey(std::string_view secret);
  ~HmacKey();
  HmacKey(HmacKey&& other) noexcept;
  HmacKey& operator=(HmacKey&& other) noexcept;
  HmacKey(const HmacKey&) = delete;
  HmacKey& operator=(const HmacKey&) = delete;

  // HMAC-SHA256(secret, message).
  HmacDigest Mac(std::string_view message) const;
  std::string MacString(std::string_view message) const;

 private:
  evp_mac_ctx_st* prepared_ = nullptr;  // owned; keyed once, never updated after
};

}  // namespace kvpool::rpc
