#include "ha/base64.h"

#include <gtest/gtest.h>

namespace kvpool::ha {

TEST(Base64Test, RoundTripsEveryLength) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("k/leader"), "ay9sZWFkZXI=");  // as etcd printed it
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n += 7) {
    auto back = Base64Decode(Base64Encode(all.substr(0, n)));
    ASSERT_TRUE(back.has_value()) << n;
    EXPECT_EQ(*back, all.substr(0, n));
  }
}

TEST(Base64Test, RefusesMalformedText) {
  EXPECT_FALSE(Base64Decode("Zg=").has_value());       // not a multiple of 4
  EXPECT_FALSE(Base64Decode("Z===").has_value());      // too much padding
  EXPECT_FALSE(Base64Decode("Zg==Zg==").has_value());  // padding inside
  EXPECT_FALSE(Base64Decode("Zm9*").has_value());      // not in the alphabet
}

}  // namespace kvpool::ha
