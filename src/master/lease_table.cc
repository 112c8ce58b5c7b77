#include "master/lease_table.h"

#include <algorithm>
#include <utility>

namespace kvpool::master {

LeaseTable::LeaseTable(uint64_t first_id)
    : next_id_(first_id == 0 ? 1 : first_id), slots_(new Slot[kShards]) {}

uint64_t LeaseTable::Add(Lease lease) {
  uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  if (id == 0) id = next_id_.fetch_add(1, std::memory_order_relaxed);  // wrapped: 0 is "none"
  held_.fetch_add(1, std::memory_order_relaxed);
  bytes_.fetch_add(lease.bytes, std::memory_order_relaxed);
  Slot& s = SlotOf(id);
  std::lock_guard lock(s.mu);
  s.leases.emplace(id, std::move(lease));
  return id;
}

void LeaseTable::Ended(const Lease& l) {
  // Release: whoever reads the lower count also sees the holds undone before it.
  held_.fetch_sub(1, std::memory_order_release);
  bytes_.fetch_sub(l.bytes, std::memory_order_relaxed);
}

std::optional<Lease> LeaseTable::Release(uint64_t id, uint32_t client) {
  Slot& s = SlotOf(id);
  std::lock_guard lock(s.mu);
  auto it = s.leases.find(id);
  if (it == s.leases.end() || it->second.client != client) return std::nullopt;
  Lease l = std::move(it->second);
  s.leases.erase(it);
  return l;
}

template <typename Pred>
std::vector<Lease> LeaseTable::TakeIf(Pred&& pred) {
  std::vector<Lease> out;
  for (size_t i = 0; i < kShards; ++i) {
    Slot& s = slots_[i];
    std::lock_guard lock(s.mu);
    for (auto it = s.leases.begin(); it != s.leases.end();) {
      if (!pred(it->second)) {
        ++it;
        continue;
      }
      out.push_back(std::move(it->second));
      it = s.leases.erase(it);
    }
  }
  return out;
}

std::vector<Lease> LeaseTable::TakeExpired(int64_t now_ns) {
  return TakeIf([now_ns](const Lease& l) { return l.expiry_ns <= now_ns; });
}

std::vector<Lease> LeaseTable::TakeClients(const std::vector<uint32_t>& clients) {
  if (clients.empty()) return {};
  return TakeIf([&clients](const Lease& l) {
    return std::find(clients.begin(), clients.end(), l.client) != clients.end();
  });
}

}  // namespace kvpool::master
