// Data-plane grants: the master's signed permission for a tenant connection to READ or WRITE one
// range of one segment until a deadline (docs/security.md, "Data-plane grants").
//
// The master (which has the pool secret) signs a Grant for every replica location it hands to a
// non-privileged connection; the client copies it into each rpc::Range it sends; the segment
// host (which has the pool secret too) checks it before any byte moves. Privileged peers carry
// and check no grants.
//
//   mac = HMAC-SHA256(pool secret, "kvpool grant" | u32 segment length | segment
//                                  | u64 incarnation | u64 offset | u64 length | u8 mode
//                                  | u64 expiry_ms)
//
// integers big-endian, fixed width, so no two grants share an encoding. The incarnation (the
// segment memory's, Replica.segment_incarnation) binds a grant to the memory it was issued for:
// a grant for a segment whose host restarted is worthless against the new memory, where the
// same range may now hold another tenant's object. Expiry is unix time in
// milliseconds: master and segment hosts need clocks within kGrantClockSkew of each other.
//
// GrantKey is thread-safe (const methods only); one serves a whole process.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "kvpool/status.h"
#include "rpc/hmac.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::rpc {

enum class GrantMode : uint32_t { kRead = 1, kWrite = 2 };

inline constexpr std::string_view kGrantLabel = "kvpool grant";
// A segment host accepts a grant up to this long after its expiry (clocks of master and hosts
// may disagree by this much).
inline constexpr std::chrono::milliseconds kGrantClockSkew{30000};

// Milliseconds since the unix epoch, from the system clock.
uint64_t UnixMillisNow();

const char* GrantModeName(GrantMode mode);  // "READ" / "WRITE"

class GrantKey {
 public:
  // `pool_secret` empty: Sign() must not be called and Check() refuses every range.
  explicit GrantKey(std::string_view pool_secret);

  bool empty() const { return empty_; }

  // Fills `out` with a grant for [offset, offset + length) of memory `incarnation` of `segment`
  // in `mode` until `expiry_ms`. About 1 µs. REQUIRES: !empty().
  void Sign(std::string_view segment, uint64_t incarnation, uint64_t offset, uint64_t length,
            GrantMode mode, uint64_t expiry_ms, Grant* out) const;

  // OK when `range` lies inside its grant, and the grant is for `segment`, `incarnation` and
  // `mode` (MAC checked in constant time) and had not expired kGrantClockSkew before `now_ms`.
  // Otherwise ILLEGAL_CLIENT naming the segment, offset, length, mode and the reason (no grant,
  // other mode, outside the granted range, bad MAC, expired).
  Status Check(std::string_view segment, uint64_t incarnation, const Range& range, GrantMode mode,
               uint64_t now_ms) const;

  // Check() for every range of `request`, for its segment and segment_incarnation (the first
  // failure is returned).
  Status CheckRequest(const DataRequest& request, GrantMode mode, uint64_t now_ms) const;

 private:
  HmacDigest Mac(std::string_view segment, uint64_t incarnation, uint64_t offset, uint64_t length,
                 GrantMode mode, uint64_t expiry_ms) const;

  HmacKey key_;
  bool empty_;
};

}  // namespace kvpool::rpc
