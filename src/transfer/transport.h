// Moving bytes between a caller's memory and a segment. One transport per file behind this
// interface (tcp_transport.cc, local_transport.cc; an RDMA transport joins here later without
// touching callers).
#pragma once

#include <sys/uio.h>

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "kvpool/status.h"
#include "rpc/endpoint.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::transfer {

// Where the segment-side bytes are: ranges of one segment served at `endpoint`, in the
// segment's memory `incarnation` (Replica.segment_incarnation; a host serving other memory
// under the name refuses with SEGMENT_NOT_FOUND).
struct SegmentRanges {
  const std::string* segment_name;
  const rpc::Endpoint* endpoint;
  std::span<const rpc::Range> ranges;
  uint64_t incarnation = 0;
  // Writes only; null: none. Called on the thread that called Write, with ranges [first, last),
  // right before the bytes of those ranges are read from the caller's memory, in order and once
  // per range. It lets the caller hash an object just before the move reads it, so that the
  // move reads it from cache (hashing a whole batch first and moving it after reads every byte
  // from memory twice). A transport may leave ranges out of the calls when it fails, or when it
  // does not read the caller's memory itself; callers must not rely on a call for each range.
  const std::function<void(size_t first, size_t last)>* before_ranges = nullptr;
  // Non-zero: a peer that makes no progress this long (connecting, sending or answering) fails
  // the move with RPC_TIMEOUT before the deadline (rpc::Connection::set_stall_timeout). Set by
  // callers that have somewhere else to go: another replica to read.
  Clock::duration stall_timeout{0};
  // Writes with before_ranges only; null: none. One key per range ("": none): asks a host
  // that lists written objects (rpc::Replica.host_records_writes) to list each named range's
  // object once its bytes are in (rpc::DataRequest.record_keys), with the checksum
  // `record_checksum(i)` gives for range i (called after before_ranges covered it; 0: not
  // listed). `recorded`, when set, receives whether the host listed them. A transport that
  // cannot ask leaves it false.
  const std::vector<std::string_view>* record_keys = nullptr;
  const std::function<uint64_t(size_t range)>* record_checksum = nullptr;
  bool* recorded = nullptr;
  // Reads only; null: not wanted. A transport that learns each range's own outcome fills it
  // with one status per range when a Read fails: OK for a range whose bytes are in `dst` and
  // exact (a disk host checked them), else that range's failure. So one corrupt object fails
  // its own key, not every key read with it. Left empty when the transport cannot tell (the
  // returned error then holds for every range).
  std::vector<Status>* range_status = nullptr;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Copies the concatenation of `src` into the concatenation of `dst.ranges`. The totals must
  // be equal. Blocks until done or `deadline`.
  // Errors: TRANSFER_FAIL / RPC_FAIL / RPC_TIMEOUT (peer), SEGMENT_NOT_FOUND (not served, or
  // another incarnation), INVALID_WRITE,
  // INVALID_PARAMS (length mismatch).
  virtual Status Write(const SegmentRanges& dst, std::span<const iovec> src, Deadline deadline) = 0;
  // Copies the concatenation of `src.ranges` into the concatenation of `dst`.
  // Errors: as Write, INVALID_READ instead of INVALID_WRITE.
  virtual Status Read(const SegmentRanges& src, std::span<const iovec> dst, Deadline deadline) = 0;
};

}  // namespace kvpool::transfer
