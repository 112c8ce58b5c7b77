// The memory regions a client registered for zero-copy calls. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <shared_mutex>

#include "kvpool/status.h"

namespace kvpool::client {

class BufferRegistry {
 public:
  // Adds [ptr, ptr+size). The same start again keeps the larger size; overlapping regions are
  // allowed. Errors: INVALID_PARAMS for a null pointer, size 0 or an address range that wraps.
  Status Register(const void* ptr, uint64_t size);
  // Errors: INVALID_PARAMS when no region starts at ptr.
  Status Unregister(const void* ptr);
  // OK when [ptr, ptr+size) lies inside one registered region; else INVALID_PARAMS naming the
  // address, the size and the fix (what `what` names, e.g. "key=abc").
  Status Check(const void* ptr, uint64_t size, std::string_view what) const;
  void Clear();

 private:
  mutable std::shared_mutex mu_;
  std::map<uintptr_t, uint64_t> regions_;  // start -> size; guarded by mu_
  uint64_t largest_ = 0;                   // largest registered size; guarded by mu_
};

}  // namespace kvpool::client
