#include "common/checksum.h"

#include <xxhash.h>

#include <memory>

#if defined(__x86_64__)
// libxxhash's runtime dispatch (the same XXH3, in AVX2 or AVX-512 where the CPU has them): the
// library's plain entry points are built for the distribution's SSE2 baseline, and at 6 GB/s
// against 9-10 GB/s the hash cost a put as much as its copy.
#include <xxh_x86dispatch.h>
#define KVPOOL_XXH3_64(data, size) XXH3_64bits_dispatch(data, size)
#define KVPOOL_XXH3_UPDATE(state, data, size) XXH3_64bits_update_dispatch(state, data, size)
#else
#define KVPOOL_XXH3_64(data, size) XXH3_64bits(data, size)
#define KVPOOL_XXH3_UPDATE(state, data, size) XXH3_64bits_update(state, data, size)
#endif

namespace kvpool {
namespace {

uint64_t NonZero(uint64_t h) { return h == 0 ? 1 : h; }

struct StateDeleter {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

}  // namespace

uint64_t ChecksumOf(const void* data, size_t size) { return NonZero(KVPOOL_XXH3_64(data, size)); }

uint64_t ChecksumOf(std::span<const iovec> buffers) {
  if (buffers.size() == 1) return ChecksumOf(buffers[0].iov_base, buffers[0].iov_len);
  std::unique_ptr<XXH3_state_t, StateDeleter> state(XXH3_createState());
  XXH3_64bits_reset(state.get());
  for (const iovec& b : buffers) KVPOOL_XXH3_UPDATE(state.get(), b.iov_base, b.iov_len);
  return NonZero(XXH3_64bits_digest(state.get()));
}

}  // namespace kvpool
