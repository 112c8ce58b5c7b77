#include "common/checksum.h"

// The state's definition, so a multi-buffer checksum keeps it on the stack (no malloc per object).
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#if defined(__x86_64__)
// libxxhash's runtime dispatch (the same XXH3, in AVX2 or AVX-512 where the CPU has them): the
// library's plain entry points are built for the distribution's SSE2 baseline, and at 6 GB/s
// against 9-10 GB/s the hash cost a put as much as its copy.
#include <xxh_x86dispatch.h>
#endif

namespace kvpool {
namespace {

uint64_t NonZero(uint64_t h) { return h == 0 ? 1 : h; }

uint64_t Xxh3(const void* data, size_t size) {
#if defined(__x86_64__)
  return XXH3_64bits_dispatch(data, size);
#else
  return XXH3_64bits(data, size);
#endif
}

void Xxh3Update(XXH3_state_t* state, const void* data, size_t size) {
#if defined(__x86_64__)
  XXH3_64bits_update_dispatch(state, data, size);
#else
  XXH3_64bits_update(state, data, size);
#endif
}

}  // namespace

uint64_t ChecksumOf(const void* data, size_t size) { return NonZero(Xxh3(data, size)); }

uint64_t ChecksumOf(std::span<const iovec> buffers) {
  if (buffers.size() == 1) return ChecksumOf(buffers[0].iov_base, buffers[0].iov_len);
  XXH3_state_t state;  // XXH_ALIGN(64) in its definition
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  for (const iovec& b : buffers) Xxh3Update(&state, b.iov_base, b.iov_len);
  return NonZero(XXH3_64bits_digest(&state));
}

}  // namespace kvpool
