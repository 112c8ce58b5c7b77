#include "transfer/segment_memory.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/random_id.h"
#include "common/units.h"

namespace kvpool::transfer {
namespace {

constexpr uint64_t kHugePage = 2ull << 20;

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Result<std::unique_ptr<SegmentMemory>> SegmentMemory::Map(uint64_t size,
                                                          SegmentMemoryOptions options) {
  if (size == 0) return Status(ErrorCode::INVALID_PARAMS, "segment size must be > 0");
  uint64_t page = options.huge_pages ? kHugePage : static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t mapped = RoundUp(size, page);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
  // Huge pages must be reserved up front: with MAP_NORESERVE a missing page would SIGBUS on
  // first touch instead of failing here.
  flags |= options.huge_pages ? MAP_HUGETLB : MAP_NORESERVE;
  if (options.prefault) flags |= MAP_POPULATE;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    std::string hint = options.huge_pages ? " (huge pages requested: reserve them with "
                                            "`sysctl vm.nr_hugepages=N` or drop --use_hugepage)"
                                          : "";
    return Status(
        ErrorCode::NO_AVAILABLE_HANDLE,
        fmt::format("cannot map a segment of {}: {}{}", FormatSize(size), strerror(err), hint));
  }
  if (!options.huge_pages) ::madvise(p, mapped, MADV_HUGEPAGE);  // best effort
  uint64_t incarnation = 0;
  while (incarnation == 0) incarnation = RandomU64();
  return std::unique_ptr<SegmentMemory>(
      new SegmentMemory(static_cast<uint8_t*>(p), mapped, size, incarnation));
}

SegmentMemory::~SegmentMemory() { ::munmap(base_, mapped_); }

}  // namespace kvpool::transfer
