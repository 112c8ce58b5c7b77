#include "rpc/frame.h"

#include <fmt/format.h>

#include <cstring>

namespace kvpool::rpc {
namespace {

template <typename T>
void Put(uint8_t* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i)
    p[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
}

template <typename T>
T Get(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}

}  // namespace

void EncodeFrameHeader(const FrameHeader& h, uint8_t out[kFrameHeaderBytes]) {
  Put<uint32_t>(out + 0, kMagic);
  Put<uint16_t>(out + 4, h.version);
  Put<uint16_t>(out + 6, h.method);
  Put<uint64_t>(out + 8, h.request_id);
  Put<uint32_t>(out + 16, h.meta_len);
  Put<uint32_t>(out + 20, static_cast<uint32_t>(h.status));
  Put<uint64_t>(out + 24, h.payload_len);
}

Result<FrameHeader> DecodeFrameHeader(const uint8_t in[kFrameHeaderBytes],
                                      const FrameLimits& limits) {
  uint32_t magic = Get<uint32_t>(in);
  if (magic != kMagic) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("bad frame magic 0x{:08x} (not a kvpool peer?)", magic));
  }
  FrameHeader h;
  h.version = Get<uint16_t>(in + 4);
  h.method = Get<uint16_t>(in + 6);
  h.request_id = Get<uint64_t>(in + 8);
  h.meta_len = Get<uint32_t>(in + 16);
  h.status = static_cast<int32_t>(Get<uint32_t>(in + 20));
  h.payload_len = Get<uint64_t>(in + 24);
  if (h.meta_len > limits.max_meta_bytes) {
    return Status(ErrorCode::INVALID_PARAMS, fmt::format("frame meta_len={} exceeds the limit {}",
                                                         h.meta_len, limits.max_meta_bytes));
  }
  if (h.payload_len > limits.max_payload_bytes) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("frame payload_len={} exceeds the limit {}", h.payload_len,
                              limits.max_payload_bytes));
  }
  return h;
}

}  // namespace kvpool::rpc
