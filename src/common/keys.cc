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

}  // namespace kvpool
