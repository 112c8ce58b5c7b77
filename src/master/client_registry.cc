#include "master/client_registry.h"

namespace kvpool::master {

ClientRegistry::TouchResult ClientRegistry::Touch(std::string_view client_id, Clock::time_point now,
                                                  bool make_known) {
  std::lock_guard lock(mu_);
  auto it = clients_.find(std::string(client_id));
  if (it == clients_.end()) {
    it = clients_.emplace(std::string(client_id), Entry{next_handle_++, false, now}).first;
  }
  Entry& e = it->second;
  TouchResult r{e.handle, e.known};
  if (now > e.last_seen) e.last_seen = now;
  if (make_known) e.known = true;
  return r;
}

std::optional<Clock::time_point> ClientRegistry::LastSeen(std::string_view client_id) const {
  std::lock_guard lock(mu_);
  auto it = clients_.find(std::string(client_id));
  if (it == clients_.end()) return std::nullopt;
  return it->second.last_seen;
}

std::vector<ClientRegistry::DeadClient> ClientRegistry::ExpireDead(Clock::time_point now,
                                                                   Clock::duration ttl) {
  std::lock_guard lock(mu_);
  std::vector<DeadClient> dead;
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (it->second.last_seen + ttl <= now) {
      dead.push_back(DeadClient{it->second.handle, it->first});
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
  return dead;
}

size_t ClientRegistry::size() const {
  std::lock_guard lock(mu_);
  return clients_.size();
}

std::vector<ClientRegistry::Snapshot> ClientRegistry::List() const {
  std::lock_guard lock(mu_);
  std::vector<Snapshot> out;
  out.reserve(clients_.size());
  for (const auto& [id, e] : clients_) out.push_back(Snapshot{id, e.handle, e.known, e.last_seen});
  return out;
}

}  // namespace kvpool::master
