#include "client/embedded/buffer_registry.h"

#include <fmt/format.h>

#include <mutex>

#include "client/shared/address_range.h"

namespace kvpool::client {

Status BufferRegistry::Register(const void* ptr, uint64_t size) {
  auto start = reinterpret_cast<uintptr_t>(ptr);
  KVPOOL_RETURN_IF_ERROR(CheckAddressRange(ptr, size, "register_buffer"));
  if (size == 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("register_buffer(ptr={}, size=0): the size must be > 0", ptr));
  }
  std::unique_lock lock(mu_);
  auto& s = regions_[start];
  s = std::max(s, size);
  largest_ = std::max(largest_, size);
  return Status::Ok();
}

Status BufferRegistry::Unregister(const void* ptr) {
  std::unique_lock lock(mu_);
  if (regions_.erase(reinterpret_cast<uintptr_t>(ptr)) == 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("unregister_buffer(ptr={}): no registered region starts there", ptr));
  }
  return Status::Ok();
}

Status BufferRegistry::Check(const void* ptr, uint64_t size, std::string_view what) const {
  KVPOOL_RETURN_IF_ERROR(CheckAddressRange(ptr, size, what));
  auto start = reinterpret_cast<uintptr_t>(ptr);
  {
    std::shared_lock lock(mu_);
    // Candidates start at or below ptr and no lower than ptr - largest_: walk back from there.
    auto it = regions_.upper_bound(start);
    while (it != regions_.begin()) {
      --it;
      if (start - it->first > largest_) break;
      if (start + size <= it->first + it->second) return Status::Ok();
    }
  }
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("{}: buffer ptr={} size={} is not inside a registered region; call "
                            "register_buffer on the memory first",
                            what, ptr, size));
}

void BufferRegistry::Clear() {
  std::unique_lock lock(mu_);
  regions_.clear();
  largest_ = 0;
}

}  // namespace kvpool::client
