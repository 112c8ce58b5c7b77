#include "transfer/tcp_transport.h"

#include <endian.h>
#include <fmt/format.h>

#include <vector>

#include "transfer/read_trailer.h"

namespace kvpool::transfer {
namespace {

uint64_t KeyBytes(std::span<const std::string_view> keys) {
  uint64_t n = 0;
  for (std::string_view k : keys) n += k.size();
  return n;
}

}  // namespace

Status TcpTransport::Call(rpc::Method method, const SegmentRanges& where,
                          std::span<const iovec> out, std::span<const iovec> in,
                          Deadline deadline) {
  rpc::DataRequest req;
  req.set_segment_name(*where.segment_name);
  req.set_segment_incarnation(where.incarnation);
  req.mutable_ranges()->Reserve(static_cast<int>(where.ranges.size()));
  for (const auto& r : where.ranges) *req.add_ranges() = r;
  const bool patient = where.stall_timeout <= Clock::duration::zero();
  const Deadline connect_by =
      patient ? deadline : std::min(deadline, Clock::now() + where.stall_timeout);
  auto conn = pool_->Acquire(*where.endpoint, connect_by);
  if (!conn.ok()) {
    if (conn.code() != ErrorCode::RPC_TIMEOUT || connect_by == deadline) return conn.status();
    return Status(ErrorCode::RPC_TIMEOUT,
                  fmt::format("segment {}: no connection to {} within {} ms (a silent peer: "
                              "partitioned, or its host hung): {}",
                              *where.segment_name, where.endpoint->ToString(),
                              std::chrono::duration_cast<Millis>(where.stall_timeout).count(),
                              conn.status().message()));
  }
  // The stall bound is this call's only: the connection goes back to the pool without it.
  struct StallScope {
    rpc::Connection* c;
    ~StallScope() { c->set_stall_timeout(Clock::duration::zero()); }
  } stall_scope{&**conn};
  (*conn)->set_stall_timeout(where.stall_timeout);
  rpc::Empty resp;
  if (method != rpc::READ) {
    if (where.before_ranges == nullptr) return (*conn)->Call(method, req, &resp, out, in, deadline);
    // Whole ranges per piece, each piece at least kPieceBytes (the last may be less).
    std::vector<uint64_t> marks{0};
    std::vector<size_t> first_range{0};
    uint64_t end = 0;
    for (size_t r = 0; r + 1 < where.ranges.size(); ++r) {
      end += where.ranges[r].length();
      if (end - marks.back() >= kPieceBytes) {
        marks.push_back(end);
        first_range.push_back(r + 1);
      }
    }
    first_range.push_back(where.ranges.size());
    // Objects the host is to list: their checksums follow the bytes in the last piece, filled
    // once its ranges are hashed (DataRequest.record_keys).
    const bool record = where.record_keys != nullptr && where.record_checksum != nullptr &&
                        where.record_keys->size() == where.ranges.size() &&
                        KeyBytes(*where.record_keys) <= kMaxRecordKeyBytes;
    std::vector<uint64_t> trailer(record ? where.ranges.size() : 0);
    std::vector<iovec> with_trailer;
    if (record) {
      for (std::string_view key : *where.record_keys) req.add_record_keys(key.data(), key.size());
      with_trailer.assign(out.begin(), out.end());
      with_trailer.push_back({trailer.data(), trailer.size() * sizeof(uint64_t)});
      out = with_trailer;
    }
    const std::function<void(size_t)> before = [&](size_t k) {
      (*where.before_ranges)(first_range[k], first_range[k + 1]);
      if (!record || k + 1 < marks.size()) return;
      for (size_t i = 0; i < trailer.size(); ++i) {
        trailer[i] = htole64((*where.record_checksum)(i));
      }
    };
    const rpc::PayloadPieces pieces{marks, &before};
    rpc::WriteReply written;
    Status st = (*conn)->Call(method, req, &written, out, in, deadline, &pieces);
    if (st.ok() && where.recorded != nullptr) *where.recorded = record && written.recorded();
    return st;
  }
  // READs end with a status trailer: a disk tier streams its bytes before it knows they are
  // all good (read_trailer.h); with each range's own code when the caller wants them.
  req.set_status_trailer(true);
  const bool per_range = where.range_status != nullptr;
  req.set_range_status(per_range);
  std::vector<uint8_t> trailer(ReadTrailerBytes(where.ranges.size(), per_range));
  std::vector<iovec> dst;
  dst.reserve(in.size() + 1);
  dst.assign(in.begin(), in.end());
  dst.push_back({trailer.data(), trailer.size()});
  Status st = (*conn)->Call(method, req, &resp, out, dst, deadline);
  if (!st.ok()) return st;
  st = ReadTrailer::Decode(trailer.data()).ToStatus(*where.segment_name, where.ranges);
  if (!st.ok() && per_range) {
    *where.range_status =
        DecodeRangeStatus(trailer.data() + ReadTrailer::kBytes, *where.segment_name, where.ranges);
  }
  return st;
}

Status TcpTransport::Write(const SegmentRanges& dst, std::span<const iovec> src,
                           Deadline deadline) {
  return Call(rpc::WRITE, dst, src, {}, deadline);
}

Status TcpTransport::Read(const SegmentRanges& src, std::span<const iovec> dst, Deadline deadline) {
  return Call(rpc::READ, src, {}, dst, deadline);
}

}  // namespace kvpool::transfer
