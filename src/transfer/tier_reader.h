// A segment served from somewhere other than mapped memory (a segment host's disk tier):
// DataService hands it the READs of segments it does not find in its SegmentTable.
//
// Threading: Read is called from the data server's threads, concurrently.
#pragma once

#include <optional>

#include "rpc/kvpool.pb.h"
#include "rpc/server.h"

namespace kvpool::transfer {

class TierReader {
 public:
  virtual ~TierReader() = default;
  // The reply to READ `req` (payload: the ranges' bytes, kept alive by the reply) when the
  // request names this reader's segment; nullopt when it names another.
  virtual std::optional<rpc::Reply> Read(const rpc::DataRequest& req) = 0;
};

}  // namespace kvpool::transfer
