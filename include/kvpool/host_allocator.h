// Host memory that a `kvpool node` can map: the allocator an inference engine uses for its host
// KV pool (L2) in standalone mode.
//
// Each allocation is a memfd (anonymous shared memory, sealed against shrinking) mapped
// MAP_SHARED into this process. When a standalone client registers a range inside it
// (Client::RegisterBuffer), the memfd is passed to the node with SCM_RIGHTS; the node maps the
// same pages and moves KV bytes straight into and out of them: one copy per transfer, none
// through a socket. Memory from anywhere else (malloc, torch's allocator, the stack) cannot be
// shared that way, and a standalone client refuses to register it.
//
// Every HostMemAllocator is a handle onto one process-wide table of live allocations, so memory
// allocated through any instance (Python creates them freely) is recognized by every client.
// Thread-safe.
#pragma once

#include <cstddef>

#include "kvpool/status.h"

namespace kvpool {

struct HostAllocatorOptions {
  // Back allocations with huge pages (MFD_HUGETLB, 2 MiB). They must be reserved by the
  // operator first (`sysctl vm.nr_hugepages=N`); sizes are rounded up to 2 MiB.
  bool huge_pages = false;
  // Reserve and fault in every page at allocation (fallocate + MAP_POPULATE): a shortage shows
  // up here as NO_AVAILABLE_HANDLE instead of later, and first writes cost no page faults.
  bool prefault = false;
};

class HostMemAllocator {
 public:
  explicit HostMemAllocator(HostAllocatorOptions options = {});

  // Allocates `size` bytes (rounded up to the page size; 2 MiB with huge_pages), page aligned,
  // zero-filled, readable and writable. The memory stays valid until Free(pointer), also after
  // this handle is destroyed; the caller owns it.
  // Errors: INVALID_PARAMS (size 0); NO_AVAILABLE_HANDLE when the memory cannot be had, naming
  // the size, the reason and the fix (more than the machine's available memory, no huge pages
  // reserved, mapping limit reached).
  Result<void*> Alloc(size_t size);

  // Releases an allocation. A node that mapped it keeps its own mapping until the client that
  // registered it unregisters it, closes or dies; no page is reused while the node can touch it.
  // REQUIRES: no registered buffer of a live client lies in it (unregister first).
  // Errors: INVALID_PARAMS when `ptr` is not the start of a live allocation (nothing happens).
  Status Free(void* ptr);

 private:
  HostAllocatorOptions options_;
};

}  // namespace kvpool
