#include "client/replicate_config_proto.h"

#include <algorithm>
#include <cstdint>

namespace kvpool::client {

rpc::ReplicateConfig ToProto(const ReplicateConfig& c) {
  rpc::ReplicateConfig p;
  // Saturate, never wrap: 2^32 + 1 replicas must reach the master as "too many" (refused with
  // INVALID_PARAMS), not as 1.
  p.set_replica_num(static_cast<uint32_t>(std::min<size_t>(c.replica_num, UINT32_MAX)));
  p.set_with_soft_pin(c.with_soft_pin);
  p.set_with_hard_pin(c.with_hard_pin);
  for (const auto& s : c.preferred_segments) p.add_preferred_segments(s);
  p.set_prefer_alloc_in_same_node(c.prefer_alloc_in_same_node);
  return p;
}

ReplicateConfig FromProto(const rpc::ReplicateConfig& p) {
  ReplicateConfig c;
  c.replica_num = p.replica_num() == 0 ? 1 : p.replica_num();
  c.with_soft_pin = p.with_soft_pin();
  c.with_hard_pin = p.with_hard_pin();
  c.preferred_segments.assign(p.preferred_segments().begin(), p.preferred_segments().end());
  c.prefer_alloc_in_same_node = p.prefer_alloc_in_same_node();
  return c;
}

}  // namespace kvpool::client
