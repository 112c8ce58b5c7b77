// Caller-supplied memory ranges before they are looked up: a range whose end wraps past the top
// of the address space would otherwise be reported as "not registered", which sends the user
// looking for a missing register_buffer call instead of at the bad pointer or size.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

#include "kvpool/status.h"

namespace kvpool::client {

// OK when [ptr, ptr + size) is an address range: ptr non-null and ptr + size not past 2^64.
// Otherwise INVALID_PARAMS naming `what` (e.g. "key=abc", "register_buffer"), ptr and size.
// Thread-safe (pure).
inline Status CheckAddressRange(const void* ptr, uint64_t size, std::string_view what) {
  const auto start = reinterpret_cast<uintptr_t>(ptr);
  if (ptr == nullptr) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("{}: buffer ptr is null (size={})", what, size));
  }
  if (size > UINTPTR_MAX - start) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("{}: buffer ptr={} size={} runs past the end of the address space "
                              "(ptr + size exceeds 2^64); pass the buffer's real address and size",
                              what, ptr, size));
  }
  return Status::Ok();
}

}  // namespace kvpool::client
