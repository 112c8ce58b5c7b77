// The process-wide table of live HostMemAllocator allocations: [base, base+size) -> memfd.
//
// This is kvpool's single intentional piece of global mutable state: an allocation made through
// any HostMemAllocator instance must be recognizable by any standalone client at
// register_buffer time (the Python binding creates allocator objects freely), so the table
// lives in a function-local static owned by no object. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "kvpool/status.h"
#include "rpc/unique_fd.h"

namespace kvpool::client {

struct HostAllocation {
  uint64_t id = 0;  // unique for the life of the process: tells a reused address apart
  uintptr_t base = 0;
  uint64_t size = 0;  // mapped bytes (the request rounded up to the page size)
};

class HostMemoryRegistry {
 public:
  static HostMemoryRegistry& Instance();

  // Records a mapping at `base` backed by `fd` (the registry owns the fd). Returns its id.
  uint64_t Add(uintptr_t base, uint64_t size, rpc::UniqueFd fd);
  // Forgets the allocation starting at `base` and returns its size (the caller unmaps).
  // INVALID_PARAMS when no live allocation starts there.
  Result<uint64_t> Remove(uintptr_t base);

  // The allocation that holds all of [ptr, ptr+size), with a duplicate of its fd (owned by the
  // caller; valid even if the allocation is freed meanwhile).
  // Errors: UNAVAILABLE_IN_CURRENT_MODE with a message fragment saying why ("no HostMemAllocator
  // allocation contains 0x..." / "it starts inside the allocation [a, b) but ends N bytes past
  // it"); NO_AVAILABLE_HANDLE when the fd cannot be duplicated (descriptor limit).
  struct Found {
    HostAllocation allocation;
    rpc::UniqueFd fd;
  };
  Result<Found> Find(const void* ptr, uint64_t size) const;

  // True while allocation `id` is live at `base` (not freed, address not reused).
  bool IsLive(uint64_t id, uintptr_t base) const;
  // Number of live allocations.
  size_t count() const;

 private:
  HostMemoryRegistry() = default;
  struct Entry {
    HostAllocation allocation;
    rpc::UniqueFd fd;
  };
  mutable std::mutex mu_;
  std::map<uintptr_t, Entry> by_base_;  // guarded by mu_
  uint64_t next_id_ = 1;                // guarded by mu_
};

}  // namespace kvpool::client
