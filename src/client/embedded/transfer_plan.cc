#include "client/embedded/transfer_plan.h"

#include <fmt/format.h>

#include <algorithm>

namespace kvpool::client {

Status TransferPlan::Add(size_t object, const rpc::Replica& replica,
                         std::span<const iovec> memory) {
  std::pair<std::string, uint64_t> id(replica.segment_name(), replica.segment_incarnation());
  auto it = segments_.find(id);
  if (it == segments_.end()) {
    auto ep = rpc::ParseEndpoint(replica.endpoint(), 0, "replica endpoint");
    if (!ep.ok()) return Status(ErrorCode::INVALID_REPLICA, ep.status().message());
    SegmentMoves moves;
    moves.endpoint = *ep;
    moves.incarnation = replica.segment_incarnation();
    it = segments_.emplace(std::move(id), std::move(moves)).first;
  }
  SegmentMoves& m = it->second;
  rpc::Range r;
  r.set_offset(replica.offset());
  r.set_length(replica.length());
  // A tenant's permission for this range (rpc/grant.h): the segment host checks it.
  if (replica.has_grant()) *r.mutable_grant() = replica.grant();
  // Where the host lists the objects written to it: its record outranks older journal entries.
  if (replica.host_records_writes()) {
    r.set_journal_seq(replica.journal_seq());
    r.set_master_epoch(replica.master_epoch());
  }
  m.ranges.push_back(std::move(r));
  m.host_records.push_back(replica.host_records_writes() ? 1 : 0);
  m.memory.insert(m.memory.end(), memory.begin(), memory.end());
  m.objects.push_back(object);
  m.memory_end.push_back(m.memory.size());
  m.bytes += replica.length();
  return Status::Ok();
}

std::vector<TransferPart> TransferPlan::Parts() const {
  const uint64_t max_parts =
      workers_ == nullptr ? 1 : static_cast<uint64_t>(workers_->threads()) + 1;
  std::vector<TransferPart> parts;
  for (const auto& [id, m] : segments_) {
    const std::string& name = id.first;
    const uint64_t want = std::clamp<uint64_t>(m.bytes / kMinPartBytes, 1,
                                               std::min<uint64_t>(max_parts, m.ranges.size()));
    // Cut after the range that reaches the next 1/want of the bytes.
    size_t first = 0;
    uint64_t done = 0;
    for (uint64_t p = 1; p <= want && first < m.ranges.size(); ++p) {
      const uint64_t goal = m.bytes * p / want;
      size_t last = first;
      while (last < m.ranges.size() && (last == first || done < goal || p == want)) {
        done += m.ranges[last].length();
        ++last;
        if (done >= goal && p != want) break;
      }
      parts.push_back({&name, &m, first, last});
      first = last;
    }
  }
  return parts;
}

std::vector<std::vector<size_t>> TransferPlan::HashedBy(const std::vector<TransferPart>& parts,
                                                        size_t objects) {
  std::vector<std::vector<size_t>> out(parts.size());
  std::vector<bool> seen(objects, false);
  for (size_t p = 0; p < parts.size(); ++p) {
    for (size_t r = parts[p].first; r < parts[p].last; ++r) {
      const size_t object = parts[p].moves->objects[r];
      if (seen[object]) continue;
      seen[object] = true;
      out[p].push_back(r);
    }
  }
  return out;
}

std::vector<uint32_t> TransferPlan::ReplicaCounts(size_t objects) const {
  std::vector<uint32_t> out(objects, 0);
  for (const auto& [id, m] : segments_) {
    for (size_t object : m.objects) ++out[object];
  }
  return out;
}

std::span<const iovec> TransferPlan::MemoryOf(const SegmentMoves& m, size_t r) {
  const size_t first = r == 0 ? 0 : m.memory_end[r - 1];
  return std::span<const iovec>(m.memory.data() + first, m.memory_end[r] - first);
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
