#include "node/mapped_region.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "common/units.h"

namespace kvpool::node {

Result<std::shared_ptr<MappedRegion>> MappedRegion::Map(int fd, uint64_t size, bool staging) {
  if (size == 0) return Status(ErrorCode::INVALID_PARAMS, "region size must be > 0");
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "region descriptor is not shared memory (expected a HostMemAllocator memfd)");
  }
  if (static_cast<uint64_t>(st.st_size) < size) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("region descriptor holds {} bytes, the region claims {}", st.st_size, size));
  }
  int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "region descriptor is not sealed against shrinking (expected a HostMemAllocator "
                  "memfd)");
  }
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    return Status(
        ErrorCode::NO_AVAILABLE_HANDLE,
        fmt::format("cannot map a client region of {}: {}", FormatSize(size), strerror(errno)));
  }
  return std::shared_ptr<MappedRegion>(new MappedRegion(static_cast<uint8_t*>(p), size, staging));
}

MappedRegion::~MappedRegion() { ::munmap(base_, size_); }

}  // namespace kvpool::node
