#include "common/keys.h"

#include <fmt/format.h>

namespace kvpool {

Status ValidateKey(std::string_view key) {
  if (key.empty()) return Status(ErrorCode::INVALID_KEY, "key is empty");
  if (key.size() > kMaxKeyBytes) {
    return Status(ErrorCode::INVALID_KEY,
                  fmt::format("key '{}...' is {} bytes, longer than the limit of {} bytes",
                              key.substr(0, 32), key.size(), kMaxKeyBytes));
  }
  return Status::Ok();
}

namespace {

template <typename Key>
std::string PackAll(std::span<const Key> keys) {
  size_t bytes = 0;
  for (const Key& k : keys) bytes += k.size() + 5;
  std::string out;
  out.reserve(bytes);
  for (const Key& k : keys) {
    for (uint64_t n = k.size();; n >>= 7) {
      if (n < 0x80) {
        out.push_back(static_cast<char>(n));
        break;
      }
      out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    }
    out.append(k);
  }
  return out;
}

}  // namespace

std::string PackKeys(std::span<const std::string_view> keys) { return PackAll(keys); }
std::string PackKeys(std::span<const std::string> keys) { return PackAll(keys); }

Result<std::vector<std::string_view>> UnpackKeys(std::string_view packed) {
  std::vector<std::string_view> keys;
  size_t pos = 0;
  while (pos < packed.size()) {
    uint64_t len = 0;
    for (int shift = 0;; shift += 7) {
      if (pos == packed.size() || shift > 28) {
        return Status(
            ErrorCode::INVALID_PARAMS,
            fmt::format("packed keys: malformed length of key {} at byte {}", keys.size(), pos));
      }
      const auto b = static_cast<uint8_t>(packed[pos++]);
      len |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) break;
    }
    if (len > packed.size() - pos) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("packed keys: key {} of {} bytes runs past the end ({} left)",
                                keys.size(), len, packed.size() - pos));
    }
    keys.emplace_back(packed.data() + pos, len);
    pos += len;
  }
  return keys;
}

namespace {

// Length of the valid UTF-8 sequence at the start of `s` (1-4), or 0 if it is not one
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view s) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;  // overlong
    if (b0 == 0xed) hi = 0x9f;  // UTF-16 surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;  // overlong
    if (b0 == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf)) return 0;
  }
  return n;
}

}  // namespace

std::string PrintableBytes(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  auto escape = [&](uint8_t b) {
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  };
  for (size_t pos = 0; pos < bytes.size();) {
    const auto b0 = static_cast<uint8_t>(bytes[pos]);
    const size_t n = Utf8SequenceLength(bytes.substr(pos));
    const bool control = b0 < 0x20 || b0 == 0x7f || b0 == '\\' ||
                         (n == 2 && b0 == 0xc2 && static_cast<uint8_t>(bytes[pos + 1]) < 0xa0);
    if (n == 0 || control) {
      // An invalid byte is escaped alone; the scan resumes at the next byte. A C1 control
      // (U+0080..U+009F, two bytes) is escaped whole.
      const size_t len = n == 0 ? 1 : n;
      for (size_t i = 0; i < len; ++i) escape(static_cast<uint8_t>(bytes[pos + i]));
      pos += len;
      continue;
    }
    out.append(bytes.substr(pos, n));
    pos += n;
  }
  return out;
}

std::string ShownKey(std::string_view key) {
  if (key.size() <= kShownKeyBytes) return PrintableBytes(key);
  // Cut at a character boundary: back off over UTF-8 continuation bytes (at most 3).
  size_t cut = kShownKeyBytes;
  for (int i = 0; i < 3 && cut > 0 && (static_cast<uint8_t>(key[cut]) & 0xc0) == 0x80; ++i) --cut;
  return PrintableBytes(key.substr(0, cut)) + "...(" + std::to_string(key.size()) + " bytes)";
}

}  // namespace kvpool
