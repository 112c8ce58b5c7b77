#include "transfer/local_transport.h"

#include <fmt/format.h>

#include <vector>

#include "transfer/iovec_cursor.h"

namespace kvpool::transfer {

Status LocalTransport::Copy(const SegmentRanges& where, std::span<const iovec> mem, bool write) {
  auto found = segments_->Find(*where.segment_name, where.incarnation);
  if (!found.ok()) return found.status();
  const std::shared_ptr<SegmentMemory>& segment = *found;
  auto total = SegmentTable::CheckRanges(*segment, *where.segment_name, where.ranges, write);
  if (!total.ok()) return total.status();
  uint64_t mem_total = 0;
  for (const auto& v : mem) mem_total += v.iov_len;
  if (mem_total != *total) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("segment={} ranges total {} bytes, buffers {}", *where.segment_name,
                              *total, mem_total));
  }
  IovecCursor cursor(mem);
  for (size_t k = 0; k < where.ranges.size(); ++k) {
    const rpc::Range& r = where.ranges[k];
    uint8_t* seg = segment->base() + r.offset();
    if (write) {
      if (where.before_ranges != nullptr) (*where.before_ranges)(k, k + 1);
      cursor.CopyOut(seg, r.length());
    } else {
      cursor.CopyIn(seg, r.length());
    }
  }
  if (write && where.recorded != nullptr) *where.recorded = Record(where);
  return Status::Ok();
}

bool LocalTransport::Record(const SegmentRanges& where) {
  if (recorder_ == nullptr || where.record_keys == nullptr || where.record_checksum == nullptr ||
      where.record_keys->size() != where.ranges.size()) {
    return false;
  }
  rpc::DataRequest req;
  req.set_segment_name(*where.segment_name);
  std::vector<uint64_t> checksums(where.ranges.size());
  for (size_t k = 0; k < where.ranges.size(); ++k) {
    *req.add_ranges() = where.ranges[k];
    req.add_record_keys((*where.record_keys)[k].data(), (*where.record_keys)[k].size());
    checksums[k] = (*where.record_checksum)(k);
  }
  return recorder_->RecordWrites(req, checksums);
}

Status LocalTransport::Write(const SegmentRanges& dst, std::span<const iovec> src, Deadline) {
  return Copy(dst, src, true);
}

Status LocalTransport::Read(const SegmentRanges& src, std::span<const iovec> dst, Deadline) {
  return Copy(src, dst, false);
}

}  // namespace kvpool::transfer
