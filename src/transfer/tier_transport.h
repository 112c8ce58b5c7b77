// Transport for this process's own tier segments (a segment host's disk tier): a READ goes
// straight to the TierReader: into the caller's memory itself when the reader can place it
// there (TierReader::ReadInto: a disk tier's O_DIRECT reads into aligned destinations), else as
// the data service would hand it a peer's, the streamed reply's ranges copied into the caller's
// memory as each comes off the disk and passes its checksum. No socket lies between a client and
// its own host's disk: a standalone engine's gets of objects on its node's disk, an embedded
// client's reads of its own disk tier.
#pragma once

#include "transfer/tier_reader.h"
#include "transfer/transport.h"

namespace kvpool::transfer {

class TierTransport : public Transport {
 public:
  // `reader` must outlive the transport. Thread-safe (as the reader is).
  explicit TierTransport(TierReader* reader) : reader_(reader) {}
  // INVALID_WRITE: a tier segment is filled by its host, never written by clients.
  Status Write(const SegmentRanges& dst, std::span<const iovec> src, Deadline deadline) override;
  // Errors: as the reader's READ (INVALID_READ, SEGMENT_NOT_FOUND, CHECKSUM_MISMATCH,
  // FILE_READ_FAIL: then nothing in `dst` is valid, except the ranges `src.range_status`
  // reports OK when the caller asked for it), INVALID_PARAMS (length mismatch). Waits at most
  // the reader's own deadline (a disk tier's io_timeout and its grace), not `deadline`.
  Status Read(const SegmentRanges& src, std::span<const iovec> dst, Deadline deadline) override;

 private:
  TierReader* const reader_;
};

}  // namespace kvpool::transfer
