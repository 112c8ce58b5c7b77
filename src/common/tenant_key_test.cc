#include "common/tenant_key.h"

#include <gtest/gtest.h>

#include <string>

#include "common/keys.h"

namespace kvpool {
namespace {

using namespace std::string_literals;

TEST(TenantKeyTest, DefaultTenantKeepsKeys) {
  EXPECT_EQ(MakeTenantKey("", "page-1"), "page-1");
  EXPECT_EQ(MakeTenantKey("default", "page-1"), "page-1");
  EXPECT_EQ(NormalizeTenantId("default"), "");
  EXPECT_EQ(NormalizeTenantId("a"), "a");
  EXPECT_EQ(TenantOf("page-1"), "");
  EXPECT_EQ(UserKeyOf("page-1"), "page-1");
}

TEST(TenantKeyTest, RoundTrip) {
  std::string k = MakeTenantKey("team-a", "page-1");
  EXPECT_EQ(k, "\0team-a\0page-1"s);
  EXPECT_TRUE(IsTenantScoped(k));
  EXPECT_EQ(TenantOf(k), "team-a");
  EXPECT_EQ(UserKeyOf(k), "page-1");
  // Same user key, other tenant: another internal key.
  EXPECT_NE(MakeTenantKey("team-b", "page-1"), k);
  // A user key may itself contain NUL bytes after the first.
  std::string odd = MakeTenantKey("t", "x\0y"s);
  EXPECT_EQ(TenantOf(odd), "t");
  EXPECT_EQ(UserKeyOf(odd), "x\0y"s);
}

TEST(TenantKeyTest, MalformedInternalKeyIsWhole) {
  std::string bad = "\0no-end"s;
  EXPECT_EQ(TenantOf(bad), "");
  EXPECT_EQ(UserKeyOf(bad), bad);
}

TEST(TenantKeyTest, ValidateTenantId) {
  EXPECT_TRUE(ValidateTenantId("").ok());
  EXPECT_TRUE(ValidateTenantId(std::string(kMaxTenantIdBytes, 't')).ok());
  EXPECT_EQ(ValidateTenantId(std::string(kMaxTenantIdBytes + 1, 't')).code(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(ValidateTenantId("a\0b"s).code(), ErrorCode::INVALID_PARAMS);
}

TEST(TenantKeyTest, ValidateUserKey) {
  EXPECT_TRUE(ValidateUserKey("a", "k", false).ok());
  EXPECT_EQ(ValidateUserKey("a", "", false).code(), ErrorCode::INVALID_KEY);
  // Internal keys stay within kMaxKeyBytes: a tenant's user keys are shorter by its prefix.
  EXPECT_EQ(MaxUserKeyBytes("abc"), kMaxKeyBytes - 5);
  EXPECT_TRUE(ValidateUserKey("abc", std::string(kMaxKeyBytes - 5, 'k'), false).ok());
  EXPECT_EQ(ValidateUserKey("abc", std::string(kMaxKeyBytes - 4, 'k'), false).code(),
            ErrorCode::INVALID_KEY);
  EXPECT_TRUE(ValidateUserKey("", std::string(kMaxKeyBytes, 'k'), false).ok());
  // A leading NUL is reserved for internal keys: only privileged connections may send one.
  std::string internal = MakeTenantKey("b", "k");
  EXPECT_EQ(ValidateUserKey("a", internal, false).code(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(ValidateUserKey("", internal, false).code(), ErrorCode::INVALID_KEY);
  EXPECT_TRUE(ValidateUserKey("", internal, true).ok());
}

}  // namespace
}  // namespace kvpool
