// Per-tenant totals of the master's object table (docs/security.md, "Tenants"): replica bytes
// (an object of size S with R replicas counts S*R, pending puts included) and objects, by
// normalized tenant id ("" is the default tenant). ObjectTable keeps it current on every insert
// and erase and on replica drops inside EraseIf; MasterCore checks --tenant_quota against it.
//
// Threading: thread-safe (one mutex, held for a map update only; a leaf lock, taken under
// shard locks).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace kvpool::master {

struct TenantUsage {
  uint64_t bytes = 0;    // replica bytes
  uint64_t objects = 0;  // objects, complete and pending
};

class TenantLedger {
 public:
  // Adds signed deltas to `tenant`'s totals.
  void Add(std::string_view tenant, int64_t bytes, int64_t objects);
  TenantUsage Usage(std::string_view tenant) const;
  // Every tenant that has held objects since start (totals may be 0), by tenant id.
  std::map<std::string, TenantUsage, std::less<>> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, TenantUsage, std::less<>> usage_;  // guarded by mu_
};

}  // namespace kvpool::master
