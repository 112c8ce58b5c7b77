#include "transfer/segment_table.h"

#include <fmt/format.h>

#include <mutex>

namespace kvpool::transfer {

Status SegmentTable::Add(const std::string& name, std::shared_ptr<SegmentMemory> memory) {
  std::unique_lock lock(mu_);
  if (!segments_.emplace(name, std::move(memory)).second) {
    return Status(ErrorCode::SEGMENT_ALREADY_EXISTS,
                  fmt::format("segment={} is already served by this process", name));
  }
  return Status::Ok();
}

void SegmentTable::Remove(const std::string& name) {
  std::unique_lock lock(mu_);
  segments_.erase(name);
}

std::shared_ptr<SegmentMemory> SegmentTable::Find(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = segments_.find(name);
  return it == segments_.end() ? nullptr : it->second;
}

Result<std::shared_ptr<SegmentMemory>> SegmentTable::Find(const std::string& name,
                                                          uint64_t incarnation) const {
  auto segment = Find(name);
  if (segment == nullptr) {
    return Status(ErrorCode::SEGMENT_NOT_FOUND,
                  fmt::format("segment={} is not served by this process", name));
  }
  if (segment->incarnation() != incarnation) {
    return Status(ErrorCode::SEGMENT_NOT_FOUND,
                  fmt::format("segment={} incarnation={:016x} is gone: this process serves "
                              "incarnation={:016x} (its host restarted; the location is stale)",
                              name, incarnation, segment->incarnation()));
  }
  return segment;
}

Status SegmentTable::OutOfRange(const SegmentMemory& segment, const std::string& name,
                                const rpc::Range& r, bool write) {
  return Status(write ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ,
                fmt::format("segment={} range offset={} length={} lies outside its {} bytes", name,
                            r.offset(), r.length(), segment.size()));
}

}  // namespace kvpool::transfer
