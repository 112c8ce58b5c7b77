#include "client/standalone/host_memory_registry.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace kvpool::client {

HostMemoryRegistry& HostMemoryRegistry::Instance() {
  // Never destroyed: allocations may be freed from static destructors of other libraries.
  static HostMemoryRegistry* registry = new HostMemoryRegistry();
  return *registry;
}

uint64_t HostMemoryRegistry::Add(uintptr_t base, uint64_t size, rpc::UniqueFd fd) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_id_++;
  by_base_[base] = Entry{{id, base, size}, std::move(fd)};
  return id;
}

Result<uint64_t> HostMemoryRegistry::Remove(uintptr_t base) {
  rpc::UniqueFd fd;  // closed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_base_.find(base);
  if (it == by_base_.end()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("free(ptr={}): not the start of a live HostMemAllocator allocation",
                              reinterpret_cast<void*>(base)));
  }
  uint64_t size = it->second.allocation.size;
  fd = std::move(it->second.fd);
  by_base_.erase(it);
  return size;
}

Result<HostMemoryRegistry::Found> HostMemoryRegistry::Find(const void* ptr, uint64_t size) const {
  const auto start = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_base_.upper_bound(start);
  if (it == by_base_.begin() ||
      start - std::prev(it)->first >= std::prev(it)->second.allocation.size) {
    return Status(ErrorCode::UNAVAILABLE_IN_CURRENT_MODE,
                  fmt::format("no HostMemAllocator allocation contains {} ({} live in this "
                              "process)",
                              ptr, by_base_.size()));
  }
  const Entry& e = std::prev(it)->second;
  const uint64_t room = e.allocation.base + e.allocation.size - start;
  if (size > room) {
    return Status(
        ErrorCode::UNAVAILABLE_IN_CURRENT_MODE,
        fmt::format("it starts inside the HostMemAllocator allocation [{}, +{}) but ends {} bytes "
                    "past its end (a registered range must lie inside one allocation)",
                    reinterpret_cast<void*>(e.allocation.base), e.allocation.size, size - room));
  }
  int dup = ::fcntl(e.fd.get(), F_DUPFD_CLOEXEC, 0);
  if (dup < 0) {
    return Status(ErrorCode::NO_AVAILABLE_HANDLE,
                  fmt::format("cannot duplicate the allocation's memfd: {}", strerror(errno)));
  }
  return Found{e.allocation, rpc::UniqueFd(dup)};
}

bool HostMemoryRegistry::IsLive(uint64_t id, uintptr_t base) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_base_.find(base);
  return it != by_base_.end() && it->second.allocation.id == id;
}

size_t HostMemoryRegistry::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_base_.size();
}

}  // namespace kvpool::client
