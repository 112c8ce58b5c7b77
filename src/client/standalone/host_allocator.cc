// HostMemAllocator: memfd + mmap(MAP_SHARED), recorded in the process-wide registry.
#include "kvpool/host_allocator.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "client/standalone/host_memory_registry.h"
#include "common/units.h"

namespace kvpool {
namespace {

constexpr uint64_t kHugePage = 2ull << 20;

// MemAvailable from /proc/meminfo in bytes; 0 when unknown.
uint64_t MemAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t kb = 0;
  std::string unit;
  while (in >> name >> kb) {
    std::getline(in, unit);
    if (name == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

Status Short(uint64_t size, const std::string& why, bool huge) {
  std::string hint = huge ? "; reserve huge pages first (`sysctl vm.nr_hugepages=N`) or allocate "
                            "without huge_pages"
                          : "";
  return Status(
      ErrorCode::NO_AVAILABLE_HANDLE,
      fmt::format("cannot allocate {} of shared host memory: {}{}", FormatSize(size), why, hint));
}

}  // namespace

HostMemAllocator::HostMemAllocator(HostAllocatorOptions options) : options_(options) {}

Result<void*> HostMemAllocator::Alloc(size_t size) {
  if (size == 0) {
    return Status(ErrorCode::INVALID_PARAMS, "HostMemAllocator::Alloc: size must be > 0");
  }
  const bool huge = options_.huge_pages;
  const uint64_t page = huge ? kHugePage : static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (size > (1ull << 62)) return Short(size, "the size is beyond any machine", huge);
  const uint64_t mapped = (size + page - 1) / page * page;
  if (!huge) {
    // memfd pages cannot be reclaimed except by swap: refuse what the machine cannot hold now
    // rather than be killed by the OOM killer later.
    uint64_t avail = MemAvailableBytes();
    if (avail > 0 && mapped > avail) {
      return Short(size,
                   fmt::format("only {} is available (MemAvailable in /proc/meminfo); make "
                               "the pool smaller or free memory",
                               FormatSize(avail)),
                   huge);
    }
  }
  unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING | (huge ? MFD_HUGETLB : 0u);
  rpc::UniqueFd fd(::memfd_create("kvpool-host", flags));
  if (!fd.valid()) return Short(size, fmt::format("memfd_create: {}", strerror(errno)), huge);
  if (::ftruncate(fd.get(), static_cast<off_t>(mapped)) != 0) {
    return Short(size, fmt::format("ftruncate: {}", strerror(errno)), huge);
  }
  if (options_.prefault && ::fallocate(fd.get(), 0, 0, static_cast<off_t>(mapped)) != 0) {
    return Short(size, fmt::format("reserving the pages: {}", strerror(errno)), huge);
  }
  // Sealed against shrinking, the node can map the memfd without risking SIGBUS.
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return Short(size, fmt::format("sealing the memfd: {}", strerror(errno)), huge);
  }
  int mflags = MAP_SHARED | (options_.prefault ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, mflags, fd.get(), 0);
  if (p == MAP_FAILED) return Short(size, fmt::format("mmap: {}", strerror(errno)), huge);
  client::HostMemoryRegistry::Instance().Add(reinterpret_cast<uintptr_t>(p), mapped, std::move(fd));
  return p;
}

Status HostMemAllocator::Free(void* ptr) {
  auto size = client::HostMemoryRegistry::Instance().Remove(reinterpret_cast<uintptr_t>(ptr));
  if (!size.ok()) return size.status();
  ::munmap(ptr, *size);
  return Status::Ok();
}

}  // namespace kvpool
