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

}  // namespace kvpool
