// Object checksums: XXH3-64 over an object's bytes, which may be split over several buffers
// (a page's layer slices). The writer computes it at put end, the master stores it, and a
// reader that asks for verification recomputes it over what it received.
//
// Threading: pure functions; the caller must keep the buffers readable during the call.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>

namespace kvpool {

// XXH3-64 (seed 0) of the concatenation of `buffers`; equal to the one-shot hash of the same
// bytes in one buffer. Never returns 0: 0 means "no checksum recorded" on the wire, so a hash
// that happens to be 0 is mapped to 1.
uint64_t ChecksumOf(std::span<const iovec> buffers);
uint64_t ChecksumOf(const void* data, size_t size);

}  // namespace kvpool
