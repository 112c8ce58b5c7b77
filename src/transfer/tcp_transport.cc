#include "transfer/tcp_transport.h"

#include <fmt/format.h>

#include <vector>

#include "transfer/read_trailer.h"

namespace kvpool::transfer {

Status TcpTransport::Call(rpc::Method method, const SegmentRanges& where,
                          std::span<const iovec> out, std::span<const iovec> in,
                          Deadline deadline) {
  rpc::DataRequest req;
  req.set_segment_name(*where.segment_name);
  req.set_segment_incarnation(where.incarnation);
  req.mutable_ranges()->Reserve(static_cast<int>(where.ranges.size()));
  for (const auto& r : where.ranges) *req.add_ranges() = r;
  auto conn = pool_->Acquire(*where.endpoint, deadline);
  if (!conn.ok()) return conn.status();
  rpc::Empty resp;
  if (method != rpc::READ) return (*conn)->Call(method, req, &resp, out, in, deadline);
  // READs end with a status trailer: a disk tier streams its bytes before it knows they are
  // all good (read_trailer.h).
  req.set_status_trailer(true);
  uint8_t trailer[ReadTrailer::kBytes];
  std::vector<iovec> dst;
  dst.reserve(in.size() + 1);
  dst.assign(in.begin(), in.end());
  dst.push_back({trailer, sizeof(trailer)});
  Status st = (*conn)->Call(method, req, &resp, out, dst, deadline);
  if (!st.ok()) return st;
  return ReadTrailer::Decode(trailer).ToStatus(*where.segment_name, where.ranges);
}

Status TcpTransport::Write(const SegmentRanges& dst, std::span<const iovec> src,
                           Deadline deadline) {
  return Call(rpc::WRITE, dst, src, {}, deadline);
}

Status TcpTransport::Read(const SegmentRanges& src, std::span<const iovec> dst, Deadline deadline) {
  return Call(rpc::READ, src, {}, dst, deadline);
}

}  // namespace kvpool::transfer
