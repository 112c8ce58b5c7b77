#include "transfer/tier_transport.h"

#include <fmt/format.h>

#include "transfer/iovec_cursor.h"
#include "transfer/read_trailer.h"

namespace kvpool::transfer {

Status TierTransport::Write(const SegmentRanges& dst, std::span<const iovec>, Deadline) {
  return Status(ErrorCode::INVALID_WRITE,
                fmt::format("segment={} is a tier segment: its host fills it", *dst.segment_name));
}

Status TierTransport::Read(const SegmentRanges& src, std::span<const iovec> dst, Deadline) {
  uint64_t want = 0, have = 0;
  for (const auto& r : src.ranges) want += r.length();
  for (const iovec& v : dst) have += v.iov_len;
  if (want != have) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("segment={}: read of {} bytes into {} bytes", *src.segment_name, want, have));
  }
  rpc::DataRequest req;
  req.set_segment_name(*src.segment_name);
  req.set_segment_incarnation(src.incarnation);
  req.mutable_ranges()->Reserve(static_cast<int>(src.ranges.size()));
  for (const auto& r : src.ranges) *req.add_ranges() = r;
  if (std::optional<Status> direct = reader_->ReadInto(req, dst, src.range_status)) {
    return *direct;
  }
  req.set_status_trailer(true);
  req.set_range_status(src.range_status != nullptr);
  std::optional<rpc::Reply> reply = reader_->Read(req);
  if (!reply) {
    return Status(
        ErrorCode::SEGMENT_NOT_FOUND,
        fmt::format("segment={} is not a tier segment of this process", *src.segment_name));
  }
  if (reply->code != ErrorCode::OK) return Status(reply->code, reply->message);
  IovecCursor out(dst);
  if (reply->source == nullptr) {  // read whole: no trailer
    for (const auto& b : reply->payload) {
      out.CopyIn(static_cast<const uint8_t*>(b.data()), b.size());
    }
    return Status::Ok();
  }
  rpc::PayloadSource& source = *reply->source;
  const size_t parts = source.parts();
  const size_t trailer_bytes = ReadTrailerBytes(src.ranges.size(), src.range_status != nullptr);
  Status verdict(ErrorCode::INTERNAL_ERROR,
                 fmt::format("segment={}: the read ended without its trailer", *src.segment_name));
  for (size_t from = 0; from < parts;) {
    const size_t ready = source.WaitReady(from);
    for (size_t i = from; i < from + ready; ++i) {
      asio::const_buffer part = source.Part(i);
      const auto* bytes = static_cast<const uint8_t*>(part.data());
      if (i + 1 < parts) {
        out.CopyIn(bytes, part.size());
      } else if (part.size() == trailer_bytes) {
        verdict = ReadTrailer::Decode(bytes).ToStatus(*src.segment_name, src.ranges);
        if (!verdict.ok() && src.range_status != nullptr) {
          *src.range_status =
              DecodeRangeStatus(bytes + ReadTrailer::kBytes, *src.segment_name, src.ranges);
        }
      }
    }
    from += ready;
  }
  return verdict;
}

}  // namespace kvpool::transfer
