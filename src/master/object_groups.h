// Object groups (ReplicateConfig.group_ids, as Mooncake documents them): objects that share a
// group id are evicted together, and a read lease on one holds them all, so a hybrid model's
// page (its KV objects plus its Mamba or SWA state objects) is either all present or all gone.
//
// Group ids are scoped by the tenant of their keys (two tenants' "g1" are different groups). A
// key is in at most one group: joining another moves it. The table only records membership;
// MasterCore acts on it (master_core.cc, master_leases.cc, eviction.cc). Not journaled: a master
// restart forgets groups (the objects stay, ungrouped).
//
// Threading: thread-safe (one mutex). Lock order: an ObjectTable shard lock may be held when
// calling any method (Shard::Erase calls Leave); never take a shard lock inside one.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvpool::master {

class ObjectGroups {
 public:
  // Most members a group may have (MasterCore refuses a put that would pass it): a member's
  // lookup, eviction and removal each walk its group's member list.
  static constexpr size_t kMaxMembers = 1024;

  // The scoped name of group `id` for keys of `tenant`.
  static std::string Scoped(std::string_view tenant, std::string_view id);

  // Makes `key` a member of `group` (leaving its previous group, if any).
  void Join(const std::string& group, std::string_view key);
  // Removes `key` from its group (its object is gone). No-op when it has none.
  void Leave(std::string_view key);
  // The other members of the group of `key` (empty: none, or not grouped).
  std::vector<std::string> PeersOf(std::string_view key) const;
  // The group of `key` ("" when none).
  std::string GroupOf(std::string_view key) const;
  // Dissolves `group`, returning its members (none left in any group).
  std::vector<std::string> Take(const std::string& group);
  size_t group_count() const;
  // Members of `group` now (0 when it has none).
  size_t MemberCount(const std::string& group) const;

 private:
  void LeaveLocked(std::string_view key);

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> group_of_;              // key -> group; mu_
  std::unordered_map<std::string, std::vector<std::string>> members_;  // group -> keys; mu_
};

}  // namespace kvpool::master
