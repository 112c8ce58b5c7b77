// The order in which a get tries an object's replicas: the nearest first. Nearest means this
// process's own segment (memcpy), then a segment served from the same host (loopback or a
// local NIC: no network hop), then remote ones in the master's order; a host this client found
// silent lately (client/embedded/peer_health.h) goes after all of them.
//
// Threading: immutable after construction; Sorted is safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "client/embedded/peer_health.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::client {

class ReplicaOrder {
 public:
  // `own_segment`: this process's segment name (empty when it has none). `own_host`: the host
  // name or IP under which this process is reached (ClientOptions::local_hostname).
  // `health` (may be null: nobody is avoided) must outlive the order.
  ReplicaOrder(std::string own_segment, std::string own_host, const PeerHealth* health = nullptr);

  // Pointers into `loc.replicas()`, nearest first; ties keep the master's order. The pointers
  // are valid while `loc` is.
  std::vector<const rpc::Replica*> Sorted(const rpc::ObjectLocation& loc) const;

  // 0: own segment, 1: same host, 2: remote, 3: a host found silent lately.
  int Distance(const rpc::Replica& r) const;

 private:
  const std::string own_segment_;
  const std::string own_host_;
  const PeerHealth* health_;
  const Clock::time_point now_;
};

}  // namespace kvpool::client
