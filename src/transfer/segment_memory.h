// The DRAM behind one segment: an anonymous private mapping owned by the process that serves it
// (a storage node, or an embedded client that contributes memory).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kvpool/status.h"

namespace kvpool::transfer {

struct SegmentMemoryOptions {
  bool huge_pages = false;  // MAP_HUGETLB (needs reserved pages: /proc/sys/vm/nr_hugepages)
  // Fault every page in before Map returns, on up to one thread per CPU (at most 8; nothing else
  // runs on the segment yet), in 256 KiB chunks: madvise(MADV_POPULATE_WRITE) (skipped before
  // Linux 5.14), then a kernel write of each chunk (a read of /dev/zero) and a user-mode store
  // per page. A node's puts (recv; a standalone client's copy) then run at the speed of memory
  // written before: on a VM, backing fresh memory is the host's work, and a hypervisor that
  // shadows page tables (PVM) charges a fault for a page's first kernel access and again for
  // its first user access, whatever the populate did (common/first_touch.h; 0.7 GB/s against
  // 15 GB/s after: docs/benchmarks.md, round 23). Costs start-up time: 2-3 s per GB on 2 vCPUs
  // of that VM; one clear of the memory elsewhere.
  bool prefault = false;
  // madvise(MADV_HUGEPAGE) (with the kernel's THP "madvise" policy). Off by default: measured on
  // a 2-core VM (docs/benchmarks.md), first touch of THP memory ran at 0.25 GB/s against 1.9
  // GB/s for 4 KiB pages (a fresh huge page is zeroed whole, and a VM whose free memory went back
  // to its host backs it anew), and copies into touched memory were no faster.
  bool transparent_huge_pages = false;
  // Fault the pages in on threads of the segment's own after Map returns (madvise
  // MADV_POPULATE_WRITE, which keeps what writers put meanwhile), so the first pass of writes
  // runs at steady-state speed without delaying start-up. One thread per CPU, up to 4, at the
  // lowest priority: on a VM, backing fresh memory is the host's work and runs at under 1 GB/s
  // per vCPU, so one thread alone is overtaken by the first writes (docs/benchmarks.md, round
  // 15); the first writes can still overtake it (issue 29). Ignored with `prefault`.
  bool prefault_in_background = false;
};

class SegmentMemory {
 public:
  // Maps `size` bytes (rounded up to the page size); with transparent_huge_pages (and without
  // huge_pages), transparent huge pages are requested with madvise where the kernel allows.
  // Errors: INVALID_PARAMS for size 0; NO_AVAILABLE_HANDLE naming the size and the reason
  // (e.g. no huge pages reserved) when the mapping fails.
  static Result<std::unique_ptr<SegmentMemory>> Map(uint64_t size, SegmentMemoryOptions options);
  ~SegmentMemory();  // stops a background prefault, then unmaps
  SegmentMemory(const SegmentMemory&) = delete;
  SegmentMemory& operator=(const SegmentMemory&) = delete;

  uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }
  // Random, never 0, drawn when the memory is mapped: names this memory, not the segment's
  // name. A location that carries another incarnation was handed out for memory that is gone
  // (a restarted process serving fresh zeroed pages under the same name) and must be refused.
  uint64_t incarnation() const { return incarnation_; }
  // Bytes faulted in by a prefault so far (0 without one). Thread-safe.
  uint64_t prefaulted_bytes() const { return prefaulted_.load(std::memory_order_relaxed); }

 private:
  SegmentMemory(uint8_t* base, uint64_t mapped, uint64_t size, uint64_t incarnation)
      : base_(base), mapped_(mapped), size_(size), incarnation_(incarnation) {}
  // Runs on each prefaulter: MADV_POPULATE_WRITE over the next chunk not yet taken (in address
  // order, the order the allocator hands space out) until none is left or stop_. `background`:
  // at the lowest priority, and an unsupported madvise ends the prefault (the pages then fault
  // in on first write); else (no writer exists yet) such a chunk is populated by writing it.
  void PrefaultChunks(bool background);
  // Stores a zero into each page of [off, off + n) from user mode (common/first_touch.h). Only
  // where no writer can see the memory yet.
  void TouchPages(uint64_t off, uint64_t n);
  // `prefault`: PrefaultChunks on `threads` threads (the caller's among them), joined.
  void PrefaultBeforeReturn(unsigned threads);

  uint8_t* base_;
  uint64_t mapped_;
  uint64_t size_;
  uint64_t incarnation_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> prefaulted_{0};
  std::atomic<uint64_t> next_chunk_{0};   // offset of the next chunk a prefaulter takes
  std::vector<std::thread> prefaulters_;  // joined by the destructor before the unmap
};

}  // namespace kvpool::transfer
