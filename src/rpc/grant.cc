#include "rpc/grant.h"

#include <fmt/format.h>
#include <openssl/crypto.h>

#include <string>

namespace kvpool::rpc {
namespace {

void AppendBig(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

uint64_t UnixMillisNow() {
  auto since = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(since).count());
}

const char* GrantModeName(GrantMode mode) { return mode == GrantMode::kWrite ? "WRITE" : "READ"; }

GrantKey::GrantKey(std::string_view pool_secret) : key_(pool_secret), empty_(pool_secret.empty()) {}

HmacDigest GrantKey::Mac(std::string_view segment, uint64_t incarnation, uint64_t offset,
                         uint64_t length, GrantMode mode, uint64_t expiry_ms) const {
  std::string message;
  message.reserve(kGrantLabel.size() + 4 + segment.size() + 8 + 8 + 8 + 1 + 8);
  message.append(kGrantLabel);
  AppendBig(message, segment.size(), 4);
  message.append(segment);
  AppendBig(message, incarnation, 8);
  AppendBig(message, offset, 8);
  AppendBig(message, length, 8);
  AppendBig(message, static_cast<uint32_t>(mode), 1);
  AppendBig(message, expiry_ms, 8);
  return key_.Mac(message);
}

void GrantKey::Sign(std::string_view segment, uint64_t incarnation, uint64_t offset,
                    uint64_t length, GrantMode mode, uint64_t expiry_ms, Grant* out) const {
  HmacDigest mac = Mac(segment, incarnation, offset, length, mode, expiry_ms);
  out->set_offset(offset);
  out->set_length(length);
  out->set_mode(static_cast<uint32_t>(mode));
  out->set_expiry_ms(expiry_ms);
  out->set_mac(reinterpret_cast<const char*>(mac.data()), mac.size());
}

Status GrantKey::Check(std::string_view segment, uint64_t incarnation, const Range& range,
                       GrantMode mode, uint64_t now_ms) const {
  auto refuse = [&](std::string_view why) {
    return Status(ErrorCode::ILLEGAL_CLIENT,
                  fmt::format("segment={} offset={} length={}: {} refused: {}", segment,
                              range.offset(), range.length(), GrantModeName(mode), why));
  };
  if (empty_) return refuse("this segment host has no pool secret to check grants with");
  if (!range.has_grant()) return refuse("no grant");
  const Grant& g = range.grant();
  if (g.mode() != static_cast<uint32_t>(mode)) {
    const uint32_t m = g.mode();
    const std::string other = m == 1 || m == 2 ? GrantModeName(static_cast<GrantMode>(m))
                                               : fmt::format("unknown mode {}", m);
    return refuse(fmt::format("the grant is for another mode ({})", other));
  }
  // Inside [g.offset, g.offset + g.length), without overflow.
  const bool inside = range.offset() >= g.offset() && range.offset() - g.offset() <= g.length() &&
                      range.length() <= g.length() - (range.offset() - g.offset());
  if (!inside) {
    return refuse(
        fmt::format("outside the granted range offset={} length={}", g.offset(), g.length()));
  }
  HmacDigest want = Mac(segment, incarnation, g.offset(), g.length(), mode, g.expiry_ms());
  if (g.mac().size() != want.size() ||
      CRYPTO_memcmp(want.data(), g.mac().data(), want.size()) != 0) {
    return refuse(
        "the grant's MAC does not match (not issued by this pool's master for this segment "
        "memory)");
  }
  const uint64_t skew = static_cast<uint64_t>(kGrantClockSkew.count());
  if (g.expiry_ms() < now_ms && now_ms - g.expiry_ms() > skew) {
    return refuse(fmt::format("the grant expired {} ms ago (clock skew allowance {} ms)",
                              now_ms - g.expiry_ms(), skew));
  }
  return Status::Ok();
}

Status GrantKey::CheckRequest(const DataRequest& request, GrantMode mode, uint64_t now_ms) const {
  for (const Range& r : request.ranges()) {
    KVPOOL_RETURN_IF_ERROR(
        Check(request.segment_name(), request.segment_incarnation(), r, mode, now_ms));
  }
  return Status::Ok();
}

}  // namespace kvpool::rpc
