#include "client/embedded/replica_order.h"

#include <algorithm>

#include "rpc/endpoint.h"

namespace kvpool::client {

ReplicaOrder::ReplicaOrder(std::string own_segment, std::string own_host, const PeerHealth* health)
    : own_segment_(std::move(own_segment)),
      own_host_(std::move(own_host)),
      health_(health),
      now_(Clock::now()) {}

int ReplicaOrder::Distance(const rpc::Replica& r) const {
  if (!own_segment_.empty() && r.segment_name() == own_segment_) return 0;
  if (health_ != nullptr && health_->Avoided(r.endpoint(), now_)) return 3;
  auto ep = rpc::ParseEndpoint(r.endpoint(), 0, "replica endpoint");
  if (ep.ok() && !own_host_.empty() && ep->host == own_host_) return 1;
  return 2;
}

std::vector<const rpc::Replica*> ReplicaOrder::Sorted(const rpc::ObjectLocation& loc) const {
  std::vector<std::pair<int, const rpc::Replica*>> ranked;
  ranked.reserve(loc.replicas_size());
  for (const rpc::Replica& r : loc.replicas()) ranked.emplace_back(Distance(r), &r);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const rpc::Replica*> out;
  out.reserve(ranked.size());
  for (const auto& [d, r] : ranked) out.push_back(r);
  return out;
}

}  // namespace kvpool::client
