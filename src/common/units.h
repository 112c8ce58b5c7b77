// Human-readable sizes and durations as operators type them ("4GB", "512 MiB", "1.5g").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kvpool/status.h"

namespace kvpool {

// Parses a byte size: a plain integer ("1048576") or a number with a unit. Units are case-
// insensitive, powers of 1024 (Mooncake and SGLang treat "GB" as GiB): b, k/kb/kib, m/mb/mib,
// g/gb/gib, t/tb/tib. Spaces between number and unit are allowed; fractions ("1.5GB") are allowed
// when the result is a whole number of bytes.
// Errors: INVALID_PARAMS naming `what` and the text for negatives, percentages, unknown units,
// overflow past 2^63, or an empty string.
Result<uint64_t> ParseSize(std::string_view text, std::string_view what = "size");

// "1.50 GiB", "64.0 KiB", "512 B".
std::string FormatSize(uint64_t bytes);

}  // namespace kvpool
