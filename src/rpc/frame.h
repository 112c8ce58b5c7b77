// The frame: a fixed 32-byte little-endian header, then `meta_len` bytes of one protobuf message
// (kvpool.proto), then `payload_len` raw bytes (page data, never inside protobuf).
//
//   offset size field
//        0    4 magic        "KVPL" (0x4C50564B)
//        4    2 version      kProtocolVersion
//        6    2 method       rpc::Method; responses set kResponseBit
//        8    8 request_id   echoed in the response
//       16    4 meta_len     <= FrameLimits::max_meta_bytes
//       20    4 status       responses: ErrorCode (0 OK); the meta is then rpc::ErrorInfo
//       24    8 payload_len  <= FrameLimits::max_payload_bytes
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvpool/status.h"

namespace kvpool::rpc {

inline constexpr uint32_t kMagic = 0x4C50564B;
inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr uint16_t kResponseBit = 0x8000;
inline constexpr size_t kFrameHeaderBytes = 32;

struct FrameLimits {
  uint32_t max_meta_bytes = 64u << 20;       // 64 MiB: ~16k keys of 4 KiB
  uint64_t max_payload_bytes = 16ull << 30;  // 16 GiB: one batch of large pages
};

struct FrameHeader {
  uint16_t version = kProtocolVersion;
  uint16_t method = 0;
  uint64_t request_id = 0;
  uint32_t meta_len = 0;
  int32_t status = 0;
  uint64_t payload_len = 0;

  bool is_response() const { return (method & kResponseBit) != 0; }
  uint16_t base_method() const { return method & static_cast<uint16_t>(~kResponseBit); }
};

void EncodeFrameHeader(const FrameHeader& h, uint8_t out[kFrameHeaderBytes]);

// Decodes and checks magic and size limits (not the version: the server answers a version
// mismatch with INVALID_VERSION rather than dropping the connection silently).
// Errors: INVALID_PARAMS with the offending field and value.
Result<FrameHeader> DecodeFrameHeader(const uint8_t in[kFrameHeaderBytes],
                                      const FrameLimits& limits);

}  // namespace kvpool::rpc
