// Object keys: what the store accepts.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvpool/status.h"

namespace kvpool {

// Longest key the store accepts, in bytes. SGLang keys are ~80 bytes; 4 KiB leaves room for
// tenant prefixes and other engines' schemes while bounding metadata memory per object.
inline constexpr size_t kMaxKeyBytes = 4096;

// OK for a key of 1..kMaxKeyBytes bytes (any bytes: keys are opaque). Otherwise INVALID_KEY
// saying which limit was broken (the key itself is shown, truncated, for context).
Status ValidateKey(std::string_view key);

// Packed key lists: a batch's keys in one buffer (EXISTS requests), so the batch costs one
// allocation on each end of the wire instead of one per key. Each key is its length as a
// LEB128 varint, then its bytes. Thread-safe (pure).
std::string PackKeys(std::span<const std::string_view> keys);
std::string PackKeys(std::span<const std::string> keys);
// The keys of `packed`, as views into it (valid while `packed` is). INVALID_PARAMS when a
// length is malformed or runs past the end. Thread-safe (pure).
Result<std::vector<std::string_view>> UnpackKeys(std::string_view packed);

// `bytes` made safe to show a human (CLI output, log lines): valid UTF-8 text passes unchanged;
// every byte that is not part of a valid UTF-8 sequence, every control character (C0, DEL,
// C1) and the backslash itself are written as \xNN, so distinct byte strings never print the
// same and nothing reaches a terminal as an escape sequence. Keys are opaque bytes (often not
// UTF-8); this is how they are displayed. Thread-safe (pure).
std::string PrintableBytes(std::string_view bytes);

// A key as messages show it: PrintableBytes of the whole key when it has at most
// kShownKeyBytes bytes, else of its first kShownKeyBytes and "...(N bytes)", so a 4 KiB key
// does not fill a screen. Thread-safe (pure).
inline constexpr size_t kShownKeyBytes = 128;
std::string ShownKey(std::string_view key);

}  // namespace kvpool
