#include "common/checksum.h"

#include <xxhash.h>

#include <memory>

namespace kvpool {
namespace {

uint64_t NonZero(uint64_t h) { return h == 0 ? 1 : h; }

struct StateDeleter {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

}  // namespace

uint64_t ChecksumOf(const void* data, size_t size) { return NonZero(XXH3_64bits(data, size)); }

uint64_t ChecksumOf(std::span<const iovec> buffers) {
  if (buffers.size() == 1) return ChecksumOf(buffers[0].iov_base, buffers[0].iov_len);
  std::unique_ptr<XXH3_state_t, StateDeleter> state(XXH3_createState());
  XXH3_64bits_reset(state.get());
  for (const iovec& b : buffers) XXH3_64bits_update(state.get(), b.iov_base, b.iov_len);
  return NonZero(XXH3_64bits_digest(state.get()));
}

}  // namespace kvpool
