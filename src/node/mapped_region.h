// One region of a standalone client's memory mapped into the node: the client's sealed memfd,
// mapped MAP_SHARED, so the node reads and writes the client's own pages. Unmapped when the last
// holder lets go: the session while the region is registered, and every operation in flight on
// it, so an operation never touches memory that was unmapped under it.
#pragma once

#include <cstdint>
#include <memory>

#include "kvpool/status.h"

namespace kvpool::node {

class MappedRegion {
 public:
  // Maps `size` bytes of `fd`. The fd must be a memfd sealed against shrinking (F_SEAL_SHRINK,
  // as HostMemAllocator makes them) holding at least `size` bytes: the seal guarantees the
  // client cannot truncate it later and make the node fault (SIGBUS) on access.
  // Errors: INVALID_PARAMS (size 0, not a regular file, too small, not sealed), NO_AVAILABLE_HANDLE
  // (mmap failed).
  static Result<std::shared_ptr<MappedRegion>> Map(int fd, uint64_t size, bool staging);
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }
  // Bytes through a staging region count as the copying path.
  bool staging() const { return staging_; }

 private:
  MappedRegion(uint8_t* base, uint64_t size, bool staging)
      : base_(base), size_(size), staging_(staging) {}
  uint8_t* base_;
  uint64_t size_;
  bool staging_;
};

}  // namespace kvpool::node
