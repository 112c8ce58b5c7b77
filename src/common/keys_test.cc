#include "common/keys.h"

#include <gtest/gtest.h>

#include <string>

namespace kvpool {

TEST(ValidateKeyTest, Limits) {
  EXPECT_TRUE(ValidateKey("a").ok());
  EXPECT_TRUE(ValidateKey(std::string(kMaxKeyBytes, 'k')).ok());
  EXPECT_EQ(ValidateKey("").code(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(ValidateKey(std::string(kMaxKeyBytes + 1, 'k')).code(), ErrorCode::INVALID_KEY);
}

TEST(PackedKeysTest, RoundTripsAnyKeys) {
  std::vector<std::string> keys = {"a",
                                   std::string(127, 'b'),
                                   std::string(128, 'c'),
                                   std::string("nul\0in\0it", 10),
                                   std::string(70000, 'd'),
                                   ""};
  const std::string packed = PackKeys(keys);
  auto back = UnpackKeys(packed);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ((*back)[i], keys[i]) << i;
  EXPECT_TRUE(UnpackKeys("")->empty());
}

TEST(PackedKeysTest, TruncatedOrMalformedIsInvalidParams) {
  const std::vector<std::string> two = {"first", std::string(200, 'x')};
  const std::string packed = PackKeys(two);
  for (size_t cut = 1; cut < packed.size(); ++cut) {
    auto r = UnpackKeys(std::string_view(packed).substr(0, cut));
    if (cut == 6) {  // exactly the first key
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->size(), 1u);
    } else {
      EXPECT_EQ(r.code(), ErrorCode::INVALID_PARAMS) << cut;
    }
  }
  EXPECT_EQ(UnpackKeys(std::string(6, '\xff')).code(), ErrorCode::INVALID_PARAMS);
}

}  // namespace kvpool
