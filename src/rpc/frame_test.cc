#include "rpc/frame.h"

#include <gtest/gtest.h>

namespace kvpool::rpc {

TEST(FrameTest, RoundTrip) {
  FrameHeader h;
  h.method = 41 | kResponseBit;
  h.request_id = 0x1122334455667788ull;
  h.meta_len = 77;
  h.status = -704;
  h.payload_len = 5ull << 30;
  uint8_t buf[kFrameHeaderBytes];
  EncodeFrameHeader(h, buf);
  auto d = DecodeFrameHeader(buf, FrameLimits());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->method, h.method);
  EXPECT_TRUE(d->is_response());
  EXPECT_EQ(d->base_method(), 41);
  EXPECT_EQ(d->request_id, h.request_id);
  EXPECT_EQ(d->meta_len, 77u);
  EXPECT_EQ(d->status, -704);
  EXPECT_EQ(d->payload_len, h.payload_len);
}

TEST(FrameTest, RejectsBadMagicAndOversize) {
  FrameHeader h;
  uint8_t buf[kFrameHeaderBytes];
  EncodeFrameHeader(h, buf);
  buf[0] ^= 0xff;
  EXPECT_EQ(DecodeFrameHeader(buf, FrameLimits()).code(), ErrorCode::INVALID_PARAMS);

  FrameLimits small;
  small.max_meta_bytes = 10;
  small.max_payload_bytes = 100;
  h.meta_len = 11;
  EncodeFrameHeader(h, buf);
  EXPECT_EQ(DecodeFrameHeader(buf, small).code(), ErrorCode::INVALID_PARAMS);
  h.meta_len = 10;
  h.payload_len = 101;
  EncodeFrameHeader(h, buf);
  EXPECT_EQ(DecodeFrameHeader(buf, small).code(), ErrorCode::INVALID_PARAMS);
}

}  // namespace kvpool::rpc
