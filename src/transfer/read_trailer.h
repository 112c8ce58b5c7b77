// The status trailer that ends a READ reply's payload when the request asked for one
// (DataRequest.status_trailer): a segment host that streams bytes as they come off its disk has
// sent its OK header before it knows whether every range reads back intact, so the verdict
// travels after the bytes. 16 bytes, little-endian: int32 code (0: every range is good), uint32
// the index of the first failed range in the request, 8 bytes zero.
//
// With DataRequest.range_status the trailer is followed by one int32 per range of the request
// (little-endian), that range's own code (0: its bytes are good), so a reader keeps the good
// ranges of a READ where some failed. Without it, a reader that gets a failing trailer must
// treat the bytes of the whole reply as invalid.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvpool/status.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::transfer {

struct ReadTrailer {
  static constexpr size_t kBytes = 16;
  static constexpr size_t kRangeCodeBytes = 4;
  ErrorCode code = ErrorCode::OK;
  uint32_t failed_range = 0;

  std::array<uint8_t, kBytes> Encode() const {
    std::array<uint8_t, kBytes> out{};
    const auto c = static_cast<uint32_t>(static_cast<int32_t>(code));
    for (int b = 0; b < 4; ++b) {
      out[b] = static_cast<uint8_t>(c >> (8 * b));
      out[4 + b] = static_cast<uint8_t>(failed_range >> (8 * b));
    }
    return out;
  }
  static ReadTrailer Decode(const uint8_t* in) {
    uint32_t c = 0, r = 0;
    for (int b = 0; b < 4; ++b) {
      c |= static_cast<uint32_t>(in[b]) << (8 * b);
      r |= static_cast<uint32_t>(in[4 + b]) << (8 * b);
    }
    return ReadTrailer{ErrorCodeFromInt(static_cast<int32_t>(c)), r};
  }
  // OK, or the failure as a reader reports it for the READ of `ranges` of `segment` (the
  // failed range named; `failed_range` from the wire is clamped to `ranges`).
  Status ToStatus(const std::string& segment, std::span<const rpc::Range> ranges) const {
    if (code == ErrorCode::OK) return Status::Ok();
    const size_t i = failed_range < ranges.size() ? failed_range : 0;
    return Status(code, fmt::format("segment={} offset={} length={} failed on its host ({}); "
                                    "the {} ranges of this read are not valid",
                                    segment, ranges.empty() ? 0 : ranges[i].offset(),
                                    ranges.empty() ? 0 : ranges[i].length(), ErrorCodeName(code),
                                    ranges.size()));
  }
};

// The bytes of the trailer of a READ of `ranges` ranges, with or without its per-range codes.
inline size_t ReadTrailerBytes(size_t ranges, bool range_status) {
  return ReadTrailer::kBytes + (range_status ? ranges * ReadTrailer::kRangeCodeBytes : 0);
}

// Writes `code` as the per-range code at `out` (kRangeCodeBytes bytes).
inline void EncodeRangeCode(ErrorCode code, uint8_t* out) {
  const auto c = static_cast<uint32_t>(static_cast<int32_t>(code));
  for (int b = 0; b < 4; ++b) out[b] = static_cast<uint8_t>(c >> (8 * b));
}

// The status of each of `ranges` of `segment` from the per-range codes at `codes` (one
// kRangeCodeBytes code per range): OK for a range whose bytes are good, else its failure.
inline std::vector<Status> DecodeRangeStatus(const uint8_t* codes, const std::string& segment,
                                             std::span<const rpc::Range> ranges) {
  std::vector<Status> out(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    uint32_t c = 0;
    for (int b = 0; b < 4; ++b) {
      c |= static_cast<uint32_t>(codes[i * ReadTrailer::kRangeCodeBytes + b]) << (8 * b);
    }
    const ErrorCode code = ErrorCodeFromInt(static_cast<int32_t>(c));
    if (code == ErrorCode::OK) continue;
    out[i] =
        Status(code, fmt::format("segment={} offset={} length={} failed on its host ({})", segment,
                                 ranges[i].offset(), ranges[i].length(), ErrorCodeName(code)));
  }
  return out;
}

// The trailer of a reply whose every range is good (a DRAM segment's READ).
inline constexpr std::array<uint8_t, ReadTrailer::kBytes> kGoodReadTrailer{};

}  // namespace kvpool::transfer
