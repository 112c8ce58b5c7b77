#include "common/first_touch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace kvpool {

bool ZeroByKernel(void* data, size_t size) {
  const int zeros = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  if (zeros < 0) return false;
  auto* p = static_cast<uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::read(zeros, p + done, size - done);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      break;
    }
    done += static_cast<size_t>(got);
  }
  ::close(zeros);
  return done == size;
}

}  // namespace kvpool
