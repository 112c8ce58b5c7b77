#include "client/standalone/region_table.h"

#include <fmt/format.h>

#include <mutex>

#include "client/shared/address_range.h"
#include "client/standalone/host_memory_registry.h"

namespace kvpool::client {

uint64_t RegionTable::NextId() {
  std::unique_lock lock(mu_);
  return next_id_++;
}

std::shared_ptr<const Region> RegionTable::OfAllocation(uint64_t alloc_id) const {
  std::shared_lock lock(mu_);
  auto it = by_alloc_.find(alloc_id);
  return it == by_alloc_.end() ? nullptr : regions_.at(it->second);
}

void RegionTable::AddRegion(Region region) {
  std::unique_lock lock(mu_);
  if (region.alloc_id != 0) by_alloc_[region.alloc_id] = region.id;
  const uint64_t id = region.id;
  regions_[id] = std::make_shared<const Region>(std::move(region));
}

void RegionTable::RemoveRegion(uint64_t region_id) {
  std::unique_lock lock(mu_);
  auto it = regions_.find(region_id);
  if (it == regions_.end()) return;
  by_alloc_.erase(it->second->alloc_id);
  regions_.erase(it);
  range_count_.erase(region_id);
  std::erase_if(ranges_, [region_id](const auto& r) { return r.second.region_id == region_id; });
}

void RegionTable::DropIfUnused(uint64_t region_id, std::vector<Region>& orphans) {
  auto count = range_count_.find(region_id);
  if (count != range_count_.end() && count->second > 0) return;
  range_count_.erase(region_id);
  auto it = regions_.find(region_id);
  if (it == regions_.end()) return;
  orphans.push_back(*it->second);
  by_alloc_.erase(it->second->alloc_id);
  regions_.erase(it);
}

std::vector<Region> RegionTable::AddRange(uintptr_t start, uint64_t size, uint64_t region_id) {
  std::vector<Region> orphans;
  std::unique_lock lock(mu_);
  auto [it, inserted] = ranges_.try_emplace(start, Range{size, region_id});
  if (inserted) {
    ++range_count_[region_id];
  } else if (it->second.region_id == region_id) {
    it->second.size = std::max(it->second.size, size);
  } else {
    const uint64_t old = it->second.region_id;
    it->second = Range{size, region_id};
    ++range_count_[region_id];
    --range_count_[old];
    DropIfUnused(old, orphans);
  }
  largest_range_ = std::max(largest_range_, size);
  return orphans;
}

Result<std::vector<Region>> RegionTable::RemoveRange(uintptr_t start) {
  std::vector<Region> orphans;
  std::unique_lock lock(mu_);
  auto it = ranges_.find(start);
  if (it == ranges_.end()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("unregister_buffer(ptr={}): no registered region starts there",
                              reinterpret_cast<void*>(start)));
  }
  const uint64_t region_id = it->second.region_id;
  ranges_.erase(it);
  --range_count_[region_id];
  DropIfUnused(region_id, orphans);
  return orphans;
}

Result<rpc::Slice> RegionTable::Translate(const void* ptr, uint64_t size,
                                          std::string_view what) const {
  KVPOOL_RETURN_IF_ERROR(CheckAddressRange(ptr, size, what));
  const auto start = reinterpret_cast<uintptr_t>(ptr);
  {
    std::shared_lock lock(mu_);
    // Candidates start at or below ptr and no lower than ptr - largest_range_.
    auto it = ranges_.upper_bound(start);
    while (it != ranges_.begin()) {
      --it;
      if (start - it->first > largest_range_) break;
      if (start + size > it->first + it->second.size) continue;
      const Region& region = *regions_.at(it->second.region_id);
      if (!HostMemoryRegistry::Instance().IsLive(region.alloc_id, region.base)) {
        return Status(ErrorCode::INVALID_PARAMS,
                      fmt::format("{}: buffer ptr={} lies in a HostMemAllocator allocation that "
                                  "was freed; register the memory that replaced it",
                                  what, ptr));
      }
      rpc::Slice s;
      s.set_region_id(region.id);
      s.set_offset(start - region.base);
      s.set_length(size);
      return s;
    }
  }
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("{}: buffer ptr={} size={} is not inside a registered region; call "
                            "register_buffer on the memory first",
                            what, ptr, size));
}

std::vector<Region> RegionTable::Regions() const {
  std::shared_lock lock(mu_);
  std::vector<Region> out;
  out.reserve(regions_.size());
  for (const auto& [id, r] : regions_) out.push_back(*r);
  return out;
}

void RegionTable::Clear() {
  std::unique_lock lock(mu_);
  regions_.clear();
  by_alloc_.clear();
  ranges_.clear();
  range_count_.clear();
  largest_range_ = 0;
}

}  // namespace kvpool::client
