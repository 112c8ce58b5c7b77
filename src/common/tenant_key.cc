#include "common/tenant_key.h"

#include <fmt/format.h>

#include "common/keys.h"

namespace kvpool {

std::string_view NormalizeTenantId(std::string_view tenant_id) {
  return tenant_id == "default" ? std::string_view() : tenant_id;
}

Status ValidateTenantId(std::string_view tenant_id) {
  if (tenant_id.size() > kMaxTenantIdBytes) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("tenant_id '{}...' is {} bytes, longer than the limit of {}",
                              tenant_id.substr(0, 32), tenant_id.size(), kMaxTenantIdBytes));
  }
  if (tenant_id.find('\0') != std::string_view::npos) {
    return Status(ErrorCode::INVALID_PARAMS, "tenant_id contains a NUL byte");
  }
  return Status::Ok();
}

std::string MakeTenantKey(std::string_view tenant, std::string_view user_key) {
  tenant = NormalizeTenantId(tenant);
  if (tenant.empty()) return std::string(user_key);
  std::string out;
  out.reserve(tenant.size() + user_key.size() + 2);
  out.push_back('\0');
  out.append(tenant);
  out.push_back('\0');
  out.append(user_key);
  return out;
}

namespace {
// Position of the '\0' that ends the tenant part, or npos when `key` is not internal.
size_t TenantEnd(std::string_view key) {
  if (!IsTenantScoped(key)) return std::string_view::npos;
  return key.find('\0', 1);
}
}  // namespace

std::string_view TenantOf(std::string_view internal_key) {
  size_t end = TenantEnd(internal_key);
  if (end == std::string_view::npos) return {};
  return internal_key.substr(1, end - 1);
}

std::string_view UserKeyOf(std::string_view internal_key) {
  size_t end = TenantEnd(internal_key);
  if (end == std::string_view::npos) return internal_key;
  return internal_key.substr(end + 1);
}

size_t MaxUserKeyBytes(std::string_view tenant) {
  tenant = NormalizeTenantId(tenant);
  return tenant.empty() ? kMaxKeyBytes : kMaxKeyBytes - tenant.size() - 2;
}

Status ValidateUserKey(std::string_view tenant, std::string_view user_key, bool privileged) {
  tenant = NormalizeTenantId(tenant);
  if (tenant.empty()) {
    KVPOOL_RETURN_IF_ERROR(ValidateKey(user_key));
  } else if (user_key.empty() || user_key.size() > MaxUserKeyBytes(tenant)) {
    if (user_key.empty()) return Status(ErrorCode::INVALID_KEY, "key is empty");
    return Status(
        ErrorCode::INVALID_KEY,
        fmt::format("key '{}...' is {} bytes, longer than the limit of {} bytes for "
                    "tenant '{}'",
                    user_key.substr(0, 32), user_key.size(), MaxUserKeyBytes(tenant), tenant));
  }
  if (!privileged && IsTenantScoped(user_key)) {
    return Status(ErrorCode::INVALID_KEY,
                  fmt::format("key of {} bytes begins with a NUL byte, which is reserved for "
                              "tenant namespaces (tenant '{}')",
                              user_key.size(), tenant.empty() ? "default" : tenant));
  }
  return Status::Ok();
}

}  // namespace kvpool
