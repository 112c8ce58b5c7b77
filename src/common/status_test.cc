#include "kvpool/status.h"

#include <gtest/gtest.h>

namespace kvpool {

TEST(StatusTest, NumbersMatchMooncake) {
  EXPECT_EQ(static_cast<int>(ErrorCode::BUFFER_OVERFLOW), -10);
  EXPECT_EQ(static_cast<int>(ErrorCode::NO_AVAILABLE_HANDLE), -200);
  EXPECT_EQ(static_cast<int>(ErrorCode::INVALID_KEY), -400);
  EXPECT_EQ(static_cast<int>(ErrorCode::INVALID_PARAMS), -600);
  EXPECT_EQ(static_cast<int>(ErrorCode::OBJECT_NOT_FOUND), -704);
  EXPECT_EQ(static_cast<int>(ErrorCode::RPC_FAIL), -900);
  EXPECT_EQ(static_cast<int>(ErrorCode::RPC_TIMEOUT), -901);
  EXPECT_EQ(static_cast<int>(ErrorCode::TENANT_QUOTA_EXCEEDED), -1700);
  EXPECT_EQ(static_cast<int>(ErrorCode::ETCD_OPERATION_ERROR), -1000);
  EXPECT_EQ(static_cast<int>(ErrorCode::NOT_LEADER), -1050);
  EXPECT_EQ(ErrorCodeName(ErrorCode::NOT_LEADER), "NOT_LEADER");
}

TEST(StatusTest, ToStringCarriesContext) {
  Status st(ErrorCode::OBJECT_NOT_FOUND, "key=abc");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.ToString(), "OBJECT_NOT_FOUND: key=abc");
  EXPECT_EQ(Status().ToString(), "OK");
}

TEST(StatusTest, UnknownNumbersMapToInternalError) {
  EXPECT_EQ(ErrorCodeFromInt(-704), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(ErrorCodeFromInt(-12345), ErrorCode::INTERNAL_ERROR);
  EXPECT_EQ(ErrorCodeName(static_cast<ErrorCode>(-12345)), "UNKNOWN_ERROR(-12345)");
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> a = 5;
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 5);
  Result<int> b(ErrorCode::INVALID_PARAMS, "x");
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.code(), ErrorCode::INVALID_PARAMS);
}

}  // namespace kvpool
