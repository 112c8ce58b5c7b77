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

std::string PackKeys(std::span<const std::string> keys) {
  size_t bytes = 0;
  for (const std::string& k : keys) bytes += k.size() + 5;
  std::string out;
  out.reserve(bytes);
  for (const std::string& k : keys) {
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

}  // namespace kvpool
