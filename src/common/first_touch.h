// First touches of fresh memory by the kernel, paid ahead of the work that would pay them.
//
// On a VM whose hypervisor shadows the guest's page tables (PVM, the 2-vCPU VM of
// docs/benchmarks.md), the guest's kernel and its user mode each fault into the hypervisor on
// their first access to a page, whatever madvise(MADV_POPULATE_WRITE) or user-mode stores did
// before: recv into fresh memory runs at 0.7 GB/s, into memory the kernel wrote before at 15 GB/s
// (round 23). Sockets read and write user memory from the kernel, so a buffer that will be sent
// from or received into is warmed by having the kernel write it once. Elsewhere this costs one
// clear of the memory.
#pragma once

#include <cstddef>

namespace kvpool {

// Has the kernel write zeros over [data, data + size) (a read of /dev/zero into it), faulting the
// pages in on the way. Only for memory no one else reads or writes meanwhile: its contents become
// zeros. Returns false, leaving the rest untouched, when /dev/zero cannot be opened or read.
// Thread-safe for disjoint ranges.
bool ZeroByKernel(void* data, size_t size);

}  // namespace kvpool
