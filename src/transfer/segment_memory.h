// The DRAM behind one segment: an anonymous private mapping owned by the process that serves it
// (a storage node, or an embedded client that contributes memory).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kvpool/status.h"

namespace kvpool::transfer {

struct SegmentMemoryOptions {
  bool huge_pages = false;  // MAP_HUGETLB (needs reserved pages: /proc/sys/vm/nr_hugepages)
  bool prefault = false;    // MAP_POPULATE: pay page faults at start, not on first write
};

class SegmentMemory {
 public:
  // Maps `size` bytes (rounded up to the page size). Without huge_pages, transparent huge pages
  // are requested with madvise where the kernel allows.
  // Errors: INVALID_PARAMS for size 0; NO_AVAILABLE_HANDLE naming the size and the reason
  // (e.g. no huge pages reserved) when the mapping fails.
  static Result<std::unique_ptr<SegmentMemory>> Map(uint64_t size, SegmentMemoryOptions options);
  ~SegmentMemory();  // unmaps
  SegmentMemory(const SegmentMemory&) = delete;
  SegmentMemory& operator=(const SegmentMemory&) = delete;

  uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }

 private:
  SegmentMemory(uint8_t* base, uint64_t mapped, uint64_t size)
      : base_(base), mapped_(mapped), size_(size) {}
  uint8_t* base_;
  uint64_t mapped_;
  uint64_t size_;
};

}  // namespace kvpool::transfer
