// Transport over TCP to the segment's data server (rpc WRITE / READ), one request per call with
// the caller's iovecs gathered/scattered straight to/from the socket.
#pragma once

#include "rpc/connection_pool.h"
#include "transfer/transport.h"

namespace kvpool::transfer {

class TcpTransport : public Transport {
 public:
  // A write with SegmentRanges::before_ranges sends its ranges in pieces of at least this many
  // bytes (whole ranges), calling the hook before each: small enough that a piece just hashed
  // is still in cache (L2 or L3) when the socket copies it, large enough that a HiCache-sized
  // batch (4 x 256 KiB) goes out in one send, which the receiving node takes in fewer reads
  // and wake-ups (with 256 KiB pieces such puts ran ~11 % slower on loopback;
  // docs/benchmarks.md, "One send per MiB of a put").
  static constexpr uint64_t kPieceBytes = 1024 << 10;
  // A write names its objects to the host (SegmentRanges::record_keys) only while their keys
  // total at most this many bytes: the request's meta stays far below the frame's limit, and a
  // write of more keys (a batch of many tiny objects under long keys) commits the older way.
  static constexpr uint64_t kMaxRecordKeyBytes = 4 << 20;

  // `pool` must outlive the transport. Thread-safe.
  explicit TcpTransport(rpc::ConnectionPool* pool) : pool_(pool) {}
  Status Write(const SegmentRanges& dst, std::span<const iovec> src, Deadline deadline) override;
  Status Read(const SegmentRanges& src, std::span<const iovec> dst, Deadline deadline) override;

 private:
  Status Call(rpc::Method method, const SegmentRanges& where, std::span<const iovec> out,
              std::span<const iovec> in, Deadline deadline);
  rpc::ConnectionPool* pool_;
};

}  // namespace kvpool::transfer
