// A segment served from somewhere other than mapped memory (a segment host's disk tier):
// DataService hands it the READs of segments it does not find in its SegmentTable.
//
// Threading: Read is called from the data server's threads, concurrently.
#pragma once

#include <sys/uio.h>

#include <optional>
#include <span>
#include <vector>

#include "rpc/kvpool.pb.h"
#include "rpc/server.h"

namespace kvpool::transfer {

class TierReader {
 public:
  virtual ~TierReader() = default;
  // The reply to READ `req` (payload: the ranges' bytes, kept alive by the reply) when the
  // request names this reader's segment; nullopt when it names another.
  virtual std::optional<rpc::Reply> Read(const rpc::DataRequest& req) = 0;
  // Reads the ranges of `req` straight into `dst` (the caller's memory, as many bytes as the
  // ranges together, in their order) when the request names this reader's segment and the
  // bytes can land there with no copy; nullopt otherwise (the caller then uses Read). Errors as
  // Read's reply codes. After an error, `range_status` (when not null) holds one status per
  // range: the bytes of a range whose status is OK are valid, the others' are not (with a null
  // `range_status`, nothing in `dst` is valid). Default: never.
  virtual std::optional<Status> ReadInto(const rpc::DataRequest& /*req*/,
                                         std::span<const iovec> /*dst*/,
                                         std::vector<Status>* /*range_status*/) {
    return std::nullopt;
  }
};

}  // namespace kvpool::transfer
