// Object keys: what the store accepts.
#pragma once

#include <cstddef>
#include <string_view>

#include "kvpool/status.h"

namespace kvpool {

// Longest key the store accepts, in bytes. SGLang keys are ~80 bytes; 4 KiB leaves room for
// tenant prefixes and other engines' schemes while bounding metadata memory per object.
inline constexpr size_t kMaxKeyBytes = 4096;

// OK for a key of 1..kMaxKeyBytes bytes (any bytes: keys are opaque). Otherwise INVALID_KEY
// saying which limit was broken (the key itself is shown, truncated, for context).
Status ValidateKey(std::string_view key);

}  // namespace kvpool
