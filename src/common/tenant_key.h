// Tenants' key namespaces (docs/security.md, "Tenants"). The master stores a tenant's object
// under an internal key that no other tenant can name:
//
//   default tenant ("" or "default"):  internal = user key, unchanged
//   tenant T:                           internal = '\0' T '\0' user key
//
// User keys beginning with '\0' are refused from tenant (non-privileged) connections, so the
// two forms never collide. Internal keys travel opaque through segment journals and node
// restore. Stateless functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "kvpool/status.h"

namespace kvpool {

// Longest tenant id, in bytes.
inline constexpr size_t kMaxTenantIdBytes = 128;

// "default" -> "" (the default tenant); anything else unchanged.
std::string_view NormalizeTenantId(std::string_view tenant_id);

// OK for "" and for 1..kMaxTenantIdBytes bytes without '\0'. Otherwise INVALID_PARAMS naming
// the tenant id and the rule it broke.
Status ValidateTenantId(std::string_view tenant_id);

// The internal key of `user_key` in `tenant` (normalized): the key itself for the default tenant.
std::string MakeTenantKey(std::string_view tenant, std::string_view user_key);

// True when `key` is in the internal form of a named tenant (starts with '\0').
inline bool IsTenantScoped(std::string_view key) { return !key.empty() && key[0] == '\0'; }

// The tenant of an internal key ("" for the default tenant, and for a malformed internal key).
std::string_view TenantOf(std::string_view internal_key);

// The user key of an internal key (the key itself for the default tenant; a malformed internal
// key is returned whole).
std::string_view UserKeyOf(std::string_view internal_key);

// The longest user key a tenant may use: internal keys stay within kMaxKeyBytes.
size_t MaxUserKeyBytes(std::string_view tenant);

// What a connection bound to `tenant` may send as a key: ValidateKey with MaxUserKeyBytes, and
// (unless `privileged`) no leading '\0'. INVALID_KEY naming the key and the tenant.
Status ValidateUserKey(std::string_view tenant, std::string_view user_key, bool privileged);

}  // namespace kvpool
