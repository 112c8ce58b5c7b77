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
  // The four that reach Mooncake's Python callers beyond its first list (its types.h numbers).
  EXPECT_EQ(static_cast<int>(ErrorCode::OBJECT_HAS_REPLICATION_TASK), -708);
  EXPECT_EQ(static_cast<int>(ErrorCode::OBJECT_REPLICA_BUSY), -714);
  EXPECT_EQ(static_cast<int>(ErrorCode::TASK_NOT_FOUND), -1400);
  EXPECT_EQ(static_cast<int>(ErrorCode::DFS_SERVICE_UNAVAILABLE), -1601);
  // A peer's number survives the wire (an unnamed one would arrive as INTERNAL_ERROR), and
  // metrics labels and CLI messages print the name.
  for (int n : {-708, -714, -1400, -1601}) {
    EXPECT_EQ(static_cast<int>(ErrorCodeFromInt(n)), n);
    EXPECT_EQ(ErrorCodeName(ErrorCodeFromInt(n)).find("UNKNOWN"), std::string::npos) << n;
  }
  EXPECT_EQ(ErrorCodeName(ErrorCode::OBJECT_REPLICA_BUSY), "OBJECT_REPLICA_BUSY");
  EXPECT_EQ(ErrorCodeName(ErrorCode::DFS_SERVICE_UNAVAILABLE), "DFS_SERVICE_UNAVAILABLE");
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
