#include "transfer/tcp_transport.h"

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
  return (*conn)->Call(method, req, &resp, out, in, deadline);
}

Status TcpTransport::Write(const SegmentRanges& dst, std::span<const iovec> src,
                           Deadline deadline) {
  return Call(rpc::WRITE, dst, src, {}, deadline);
}

Status TcpTransport::Read(const SegmentRanges& src, std::span<const iovec> dst, Deadline deadline) {
  return Call(rpc::READ, src, {}, dst, deadline);
}

}  // namespace kvpool::transfer
