// Transport for segments served by this very process: memcpy between the caller's memory and
// the segment, with the same range checks the data service applies to remote peers.
#pragma once

#include "transfer/segment_table.h"
#include "transfer/transport.h"
#include "transfer/write_recorder.h"

namespace kvpool::transfer {

class LocalTransport : public Transport {
 public:
  // `segments` (and `recorder`, when set) must outlive the transport. Writes that name their
  // objects (SegmentRanges::record_keys) are listed by `recorder` (null: none). Thread-safe.
  explicit LocalTransport(const SegmentTable* segments, WriteRecorder* recorder = nullptr)
      : segments_(segments), recorder_(recorder) {}
  // True when `segment_name` is served by this process.
  bool Serves(const std::string& segment_name) const {
    return segments_->Find(segment_name) != nullptr;
  }
  Status Write(const SegmentRanges& dst, std::span<const iovec> src, Deadline deadline) override;
  Status Read(const SegmentRanges& src, std::span<const iovec> dst, Deadline deadline) override;

 private:
  Status Copy(const SegmentRanges& where, std::span<const iovec> mem, bool write);
  // Lists the objects `where` names once their bytes are in; returns whether it did.
  bool Record(const SegmentRanges& where);
  const SegmentTable* segments_;
  WriteRecorder* recorder_;
};

}  // namespace kvpool::transfer
