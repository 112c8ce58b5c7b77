// Serves WRITE and READ of this process's segments to any peer (rpc::Service). Page bytes move
// straight between the socket and segment memory (scatter/gather, no staging buffer).
// Thread-safe; counters are relaxed atomics.
#pragma once

#include <atomic>
#include <cstdint>

#include "rpc/server.h"
#include "transfer/segment_table.h"

namespace kvpool::transfer {

struct DataServiceCounters {
  std::atomic<uint64_t> writes{0};  // WRITE / READ requests received (refused ones included)
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> bytes_written{0};
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> requests_refused{0};
};

class DataService : public rpc::Service {
 public:
  // `segments` must outlive the service.
  explicit DataService(const SegmentTable* segments) : segments_(segments) {}

  // WRITE: DataRequest + payload of exactly the ranges' total length.
  // READ: DataRequest -> payload of the ranges' bytes in order.
  // Errors: SEGMENT_NOT_FOUND (not served here), INVALID_WRITE / INVALID_READ (a range outside
  // the segment; nothing moves), INVALID_PARAMS (payload length mismatch, unparsable request),
  // NOT_SUPPORTED (another method).
  asio::awaitable<rpc::Reply> Handle(const rpc::FrameHeader& header, std::string_view meta,
                                     rpc::PayloadReader& payload) override;

  const DataServiceCounters& counters() const { return counters_; }

 private:
  asio::awaitable<rpc::Reply> Write(const rpc::DataRequest& req, rpc::PayloadReader& payload);
  rpc::Reply Read(const rpc::DataRequest& req);

  const SegmentTable* segments_;
  DataServiceCounters counters_;
};

}  // namespace kvpool::transfer
