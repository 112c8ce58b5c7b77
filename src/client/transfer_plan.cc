#include "client/transfer_plan.h"

#include <fmt/format.h>

namespace kvpool::client {

Status TransferPlan::Add(size_t object, const rpc::Replica& replica,
                         const std::vector<iovec>& memory) {
  auto it = segments_.find(replica.segment_name());
  if (it == segments_.end()) {
    auto ep = rpc::ParseEndpoint(replica.endpoint(), 0, "replica endpoint");
    if (!ep.ok()) return Status(ErrorCode::INVALID_REPLICA, ep.status().message());
    it = segments_.emplace(replica.segment_name(), SegmentMoves{*ep, {}, {}, {}}).first;
  }
  SegmentMoves& m = it->second;
  rpc::Range r;
  r.set_offset(replica.offset());
  r.set_length(replica.length());
  m.ranges.push_back(std::move(r));
  m.memory.insert(m.memory.end(), memory.begin(), memory.end());
  m.objects.push_back(object);
  return Status::Ok();
}

std::vector<iovec> Prefix(const std::vector<iovec>& buffers, uint64_t length) {
  std::vector<iovec> out;
  for (const auto& b : buffers) {
    if (length == 0) break;
    uint64_t n = std::min<uint64_t>(length, b.iov_len);
    out.push_back({b.iov_base, n});
    length -= n;
  }
  return out;
}

uint64_t TotalLength(const std::vector<iovec>& buffers) {
  uint64_t n = 0;
  for (const auto& b : buffers) n += b.iov_len;
  return n;
}

}  // namespace kvpool::client
