#include "master/tenant_ledger.h"

namespace kvpool::master {

void TenantLedger::Add(std::string_view tenant, int64_t bytes, int64_t objects) {
  if (bytes == 0 && objects == 0) return;
  std::lock_guard lock(mu_);
  auto it = usage_.find(tenant);
  if (it == usage_.end()) it = usage_.emplace(std::string(tenant), TenantUsage{}).first;
  it->second.bytes += static_cast<uint64_t>(bytes);  // two's complement: adds a negative delta
  it->second.objects += static_cast<uint64_t>(objects);
}

TenantUsage TenantLedger::Usage(std::string_view tenant) const {
  std::lock_guard lock(mu_);
  auto it = usage_.find(tenant);
  return it == usage_.end() ? TenantUsage{} : it->second;
}

std::map<std::string, TenantUsage, std::less<>> TenantLedger::Snapshot() const {
  std::lock_guard lock(mu_);
  return usage_;
}

}  // namespace kvpool::master
