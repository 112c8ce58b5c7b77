// A standalone client's registered memory: the ranges the caller registered (what zero-copy
// calls may use) and the regions behind them. A region is one HostMemAllocator allocation (or
// the staging buffer), known to the node by a region id chosen here; a batch call names memory
// as (region id, offset, length). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string_view>
#include <vector>

#include "kvpool/status.h"
#include "rpc/kvpool.pb.h"
#include "rpc/unique_fd.h"

namespace kvpool::client {

struct Region {
  uint64_t id = 0;
  uint64_t alloc_id = 0;  // HostMemoryRegistry id of the allocation
  uintptr_t base = 0;
  uint64_t size = 0;
  bool staging = false;
  std::shared_ptr<rpc::UniqueFd> fd;  // kept to register the region again after a node restart
};

class RegionTable {
 public:
  // A fresh region id (never 0, never reused by this table).
  uint64_t NextId();
  // The region of allocation `alloc_id`, or null.
  std::shared_ptr<const Region> OfAllocation(uint64_t alloc_id) const;
  void AddRegion(Region region);
  // Removes a region and every range that points into it.
  void RemoveRegion(uint64_t region_id);

  // Records the registered range [start, start+size) inside region `region_id`. The same start
  // again keeps the larger size; a start that pointed into another region (the address was
  // freed and reallocated) is moved. Returns the regions left with no range (removed here; the
  // caller unregisters them at the node).
  std::vector<Region> AddRange(uintptr_t start, uint64_t size, uint64_t region_id);
  // Forgets the range starting at `start`; returns the regions left with no range (removed).
  // Errors: INVALID_PARAMS when no registered range starts there.
  Result<std::vector<Region>> RemoveRange(uintptr_t start);

  // [ptr, ptr+size) as a slice of its region. It must lie inside one registered range of an
  // allocation that is still live. Errors: INVALID_PARAMS naming `what`, the pointer, the size
  // and the fix.
  Result<rpc::Slice> Translate(const void* ptr, uint64_t size, std::string_view what) const;

  // Every region (for re-registration after a node restart).
  std::vector<Region> Regions() const;
  void Clear();

 private:
  struct Range {
    uint64_t size;
    uint64_t region_id;
  };
  // Drops `region_id` when no range points at it; appends it to `orphans`.
  void DropIfUnused(uint64_t region_id, std::vector<Region>& orphans);

  mutable std::shared_mutex mu_;
  std::map<uint64_t, std::shared_ptr<const Region>> regions_;  // by id; guarded by mu_
  std::map<uint64_t, uint64_t> by_alloc_;                      // alloc id -> region id; mu_
  std::map<uintptr_t, Range> ranges_;                          // by start; guarded by mu_
  std::map<uint64_t, size_t> range_count_;                     // region id -> ranges; mu_
  uint64_t largest_range_ = 0;                                 // guarded by mu_
  uint64_t next_id_ = 1;                                       // guarded by mu_
};

}  // namespace kvpool::client
