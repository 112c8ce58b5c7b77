// The frame header decoder (rpc/frame.h): any 32 bytes, any limits. A header that decodes must
// respect the limits and encode back to the same bytes; one that does not gets INVALID_PARAMS
// with a message.
#include <cstdlib>
#include <cstring>

#include "fuzz_input.h"
#include "rpc/frame.h"

using namespace kvpool;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t header[rpc::kFrameHeaderBytes] = {};
  std::memcpy(header, data, std::min(size, sizeof(header)));
  rpc::FrameLimits limits;
  if (size > sizeof(header)) {
    fuzz::FuzzInput in(data + sizeof(header), size - sizeof(header));
    limits.max_meta_bytes = static_cast<uint32_t>(in.U64());
    limits.max_payload_bytes = in.U64();
  }
  auto h = rpc::DecodeFrameHeader(header, limits);
  if (!h.ok()) {
    if (h.code() != ErrorCode::INVALID_PARAMS || h.status().message().empty()) std::abort();
    return 0;
  }
  if (h->meta_len > limits.max_meta_bytes || h->payload_len > limits.max_payload_bytes) {
    std::abort();
  }
  uint8_t again[rpc::kFrameHeaderBytes];
  rpc::EncodeFrameHeader(*h, again);
  if (std::memcmp(header, again, sizeof(header)) != 0) std::abort();
  if (h->is_response() != ((h->method & rpc::kResponseBit) != 0)) std::abort();
  return 0;
}
