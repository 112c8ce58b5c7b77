#include "master/object_groups.h"

#include <algorithm>

namespace kvpool::master {

std::string ObjectGroups::Scoped(std::string_view tenant, std::string_view id) {
  std::string s;
  s.reserve(tenant.size() + 1 + id.size());
  s.append(tenant);
  s.push_back('\0');  // never inside a tenant name
  s.append(id);
  return s;
}

void ObjectGroups::LeaveLocked(std::string_view key) {
  auto it = group_of_.find(std::string(key));
  if (it == group_of_.end()) return;
  auto m = members_.find(it->second);
  if (m != members_.end()) {
    auto& v = m->second;
    v.erase(std::remove(v.begin(), v.end(), it->first), v.end());
    if (v.empty()) members_.erase(m);
  }
  group_of_.erase(it);
}

void ObjectGroups::Join(const std::string& group, std::string_view key) {
  std::lock_guard lock(mu_);
  LeaveLocked(key);
  group_of_.emplace(std::string(key), group);
  members_[group].emplace_back(key);
}

void ObjectGroups::Leave(std::string_view key) {
  std::lock_guard lock(mu_);
  LeaveLocked(key);
}

std::vector<std::string> ObjectGroups::PeersOf(std::string_view key) const {
  std::lock_guard lock(mu_);
  auto it = group_of_.find(std::string(key));
  if (it == group_of_.end()) return {};
  auto m = members_.find(it->second);
  if (m == members_.end()) return {};
  std::vector<std::string> out;
  for (const std::string& k : m->second) {
    if (k != key) out.push_back(k);
  }
  return out;
}

std::string ObjectGroups::GroupOf(std::string_view key) const {
  std::lock_guard lock(mu_);
  auto it = group_of_.find(std::string(key));
  return it == group_of_.end() ? std::string() : it->second;
}

std::vector<std::string> ObjectGroups::Take(const std::string& group) {
  std::lock_guard lock(mu_);
  auto m = members_.find(group);
  if (m == members_.end()) return {};
  std::vector<std::string> out = std::move(m->second);
  members_.erase(m);
  for (const std::string& k : out) group_of_.erase(k);
  return out;
}

size_t ObjectGroups::group_count() const {
  std::lock_guard lock(mu_);
  return members_.size();
}

size_t ObjectGroups::MemberCount(const std::string& group) const {
  std::lock_guard lock(mu_);
  auto m = members_.find(group);
  return m == members_.end() ? 0 : m->second.size();
}

}  // namespace kvpool::master
