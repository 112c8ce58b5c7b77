// The segments a process serves, by name. Shared by the data service (remote peers) and the
// local transport (same-process memcpy). Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>

#include "kvpool/status.h"
#include "rpc/kvpool.pb.h"
#include "transfer/segment_memory.h"

namespace kvpool::transfer {

class SegmentTable {
 public:
  // Takes shared ownership of `memory` under `name`. SEGMENT_ALREADY_EXISTS for a taken name.
  Status Add(const std::string& name, std::shared_ptr<SegmentMemory> memory);
  // Removes the segment; in-flight transfers that hold it keep the memory mapped until done.
  void Remove(const std::string& name);
  // The segment, or nullptr.
  std::shared_ptr<SegmentMemory> Find(const std::string& name) const;
  // The segment `name` if its memory is `incarnation` (SegmentMemory::incarnation), else
  // SEGMENT_NOT_FOUND naming both: the segment is not served here, or the location was handed
  // out for memory this process does not have (it restarted since, or never had it).
  Result<std::shared_ptr<SegmentMemory>> Find(const std::string& name, uint64_t incarnation) const;

  // Checks that every range lies inside `segment` and returns the total length. `write` picks
  // the error code: INVALID_WRITE / INVALID_READ, naming the segment, offset and length.
  // `Ranges` is any sequence of rpc::Range.
  template <typename Ranges>
  static Result<uint64_t> CheckRanges(const SegmentMemory& segment, const std::string& name,
                                      const Ranges& ranges, bool write) {
    uint64_t total = 0;
    for (const rpc::Range& r : ranges) {
      // offset + length may overflow: compare against what is left instead.
      if (r.offset() > segment.size() || r.length() > segment.size() - r.offset()) {
        return OutOfRange(segment, name, r, write);
      }
      total += r.length();
    }
    return total;
  }

 private:
  static Status OutOfRange(const SegmentMemory& segment, const std::string& name,
                           const rpc::Range& r, bool write);

  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<SegmentMemory>> segments_;  // guarded by mu_
};

}  // namespace kvpool::transfer
