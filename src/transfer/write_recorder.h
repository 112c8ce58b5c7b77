// Where the objects a write names go (rpc::DataRequest.record_keys): hosting::SegmentHost lists
// them in its segment's object list, so that a successor master learns of them before the
// master's journal commits them (docs/failure-model.md, "Commits recorded on write"). Called by
// the data service for a peer's WRITE and by LocalTransport for this process's own.
#pragma once

#include <cstdint>
#include <span>

#include "rpc/kvpool.pb.h"

namespace kvpool::transfer {

class WriteRecorder {
 public:
  virtual ~WriteRecorder() = default;
  // Called once every byte of a write of `req.segment_name()` that names its objects
  // (req.record_keys, one per range) is in, before the writer hears of it: `checksums` holds
  // the writer's XXH3 of each range (0: none; such a range, or one with an empty key, is not
  // listed). Returns whether it listed them (false: it keeps no list for that segment).
  // Thread-safe: data threads call it at once.
  virtual bool RecordWrites(const rpc::DataRequest& req, std::span<const uint64_t> checksums) = 0;
};

}  // namespace kvpool::transfer
