#include "transfer/local_transport.h"

#include <fmt/format.h>

#include <cstring>

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
  // Walk both sequences at once: the ranges and the caller's iovecs need not line up.
  size_t mi = 0;
  uint64_t moff = 0;
  for (const auto& r : where.ranges) {
    uint8_t* seg = segment->base() + r.offset();
    uint64_t left = r.length();
    while (left > 0) {
      uint8_t* m = static_cast<uint8_t*>(mem[mi].iov_base) + moff;
      uint64_t n = std::min<uint64_t>(left, mem[mi].iov_len - moff);
      if (write) {
        std::memcpy(seg, m, n);
      } else {
        std::memcpy(m, seg, n);
      }
      seg += n;
      left -= n;
      moff += n;
      if (moff == mem[mi].iov_len) {
        ++mi;
        moff = 0;
      }
    }
  }
  return Status::Ok();
}

Status LocalTransport::Write(const SegmentRanges& dst, std::span<const iovec> src, Deadline) {
  return Copy(dst, src, true);
}

Status LocalTransport::Read(const SegmentRanges& src, std::span<const iovec> dst, Deadline) {
  return Copy(src, dst, false);
}

}  // namespace kvpool::transfer
