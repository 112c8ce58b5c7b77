// Serves WRITE and READ of this process's segments to any peer (rpc::Service). Page bytes move
// straight between the socket and segment memory (scatter/gather, no staging buffer).
//
// A tenant (non-privileged) connection may only touch ranges the master granted it: every range
// must carry a valid, unexpired grant for this segment and method (rpc/grant.h), checked with
// the pool secret before anything else; privileged peers are not checked.
//
// Thread-safe; counters are relaxed atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "common/log_throttle.h"
#include "rpc/grant.h"
#include "rpc/server.h"
#include "transfer/segment_table.h"
#include "transfer/tier_reader.h"
#include "transfer/write_recorder.h"

namespace kvpool::transfer {

struct DataServiceCounters {
  std::atomic<uint64_t> writes{0};  // WRITE / READ requests received (refused ones included)
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> bytes_written{0};
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> requests_refused{0};
  rpc::ZeroCopyCounters zero_copy;          // the data port's READ replies (rpc/zero_copy.h)
  std::atomic<uint64_t> grants_refused{0};  // of which refused for a missing or invalid grant
};

class DataService : public rpc::Service {
 public:
  using ClockFn = uint64_t (*)();  // unix time in ms, for grant expiry
  // `segments` must outlive the service. `pool_secret` checks tenants' grants (empty: every
  // tenant request is refused; privileged peers are served regardless).
  explicit DataService(const SegmentTable* segments, std::string_view pool_secret = {},
                       ClockFn unix_ms = &rpc::UnixMillisNow)
      : segments_(segments), grants_(pool_secret), unix_ms_(unix_ms) {}

  // WRITE: DataRequest + payload of exactly the ranges' total length (with record_keys, and the
  // record trailer of 8 bytes per range after them) -> WriteReply. The objects it names are
  // listed (WriteReply.recorded) only for a privileged peer and a service with a recorder.
  // READ: DataRequest -> payload of the ranges' bytes in order.
  // Errors: ILLEGAL_CLIENT (a tenant connection and a range without a valid grant; nothing
  // moves, a WRITE's payload is discarded), SEGMENT_NOT_FOUND (not served here, or
  // segment_incarnation is not the served memory's), INVALID_WRITE / INVALID_READ (a range outside
  // the segment; nothing moves), INVALID_PARAMS (payload length mismatch, unparsable request),
  // NOT_SUPPORTED (another method).
  asio::awaitable<rpc::Reply> HandleFrom(const rpc::ConnectionContext& context,
                                         const rpc::FrameHeader& header, std::string_view meta,
                                         rpc::PayloadReader& payload) override;
  // HandleFrom for a privileged peer.
  asio::awaitable<rpc::Reply> Handle(const rpc::FrameHeader& header, std::string_view meta,
                                     rpc::PayloadReader& payload) override;

  // The grant check HandleFrom applies to a tenant's request: OK, or ILLEGAL_CLIENT naming
  // the first range without a valid grant (logged and counted).
  Status CheckTenant(const rpc::ConnectionContext& context, const rpc::DataRequest& req,
                     rpc::GrantMode mode);

  const DataServiceCounters& counters() const { return counters_; }
  // Where the data server counts its zero-copy sends (rpc::ServerOptions::zero_copy_counters).
  rpc::ZeroCopyCounters* zero_copy_counters() { return &counters_.zero_copy; }
  // READs of segments not in the table go to `reader` (a disk tier; null: none). Set it before
  // the server starts; it must outlive the service.
  void set_tier_reader(TierReader* reader) { tier_reader_ = reader; }
  // WRITEs that name their objects are listed by `recorder` (null: none, and WriteReply.recorded
  // stays false). Set it before the server starts; it must outlive the service.
  void set_write_recorder(WriteRecorder* recorder) { recorder_ = recorder; }

 private:
  asio::awaitable<rpc::Reply> Write(const rpc::DataRequest& req, rpc::PayloadReader& payload,
                                    bool privileged);
  rpc::Reply Read(const rpc::DataRequest& req);

  const SegmentTable* segments_;
  const rpc::GrantKey grants_;
  const ClockFn unix_ms_;
  DataServiceCounters counters_;
  // A restarted or replaced host is asked for its old memory once per stale location until
  // clients learn: one line a second, not one per request.
  LogThrottle stale_refusals_{std::chrono::seconds(1)};
  void LogRefusal(const char* op, const Status& why);
  TierReader* tier_reader_ = nullptr;
  WriteRecorder* recorder_ = nullptr;
};

}  // namespace kvpool::transfer
