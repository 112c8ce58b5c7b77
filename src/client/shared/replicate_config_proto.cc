#include "client/shared/replicate_config_proto.h"

#include <fmt/format.h>

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
  for (const auto& g : c.group_ids) p.add_group_ids(g);
  p.set_soft_pin_ttl_ms(c.soft_pin_ttl_ms);
  p.set_keep_soft_pin_on_upsert(c.keep_soft_pin_on_upsert);
  return p;
}

ReplicateConfig FromProto(const rpc::ReplicateConfig& p) {
  ReplicateConfig c;
  c.replica_num = p.replica_num() == 0 ? 1 : p.replica_num();
  c.with_soft_pin = p.with_soft_pin();
  c.with_hard_pin = p.with_hard_pin();
  c.preferred_segments.assign(p.preferred_segments().begin(), p.preferred_segments().end());
  c.prefer_alloc_in_same_node = p.prefer_alloc_in_same_node();
  c.group_ids.assign(p.group_ids().begin(), p.group_ids().end());
  c.soft_pin_ttl_ms = p.soft_pin_ttl_ms();
  c.keep_soft_pin_on_upsert = p.keep_soft_pin_on_upsert();
  return c;
}

Status CheckGroupIds(const ReplicateConfig& config, size_t keys) {
  if (config.group_ids.empty() || config.group_ids.size() == keys) return Status::Ok();
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("group_ids has {} entries for {} keys: give one per key, or none",
                            config.group_ids.size(), keys));
}

ReplicateConfig ConfigForKeys(const ReplicateConfig& config, const std::vector<size_t>& indices) {
  ReplicateConfig part = config;
  if (config.group_ids.empty()) return part;
  part.group_ids.clear();
  part.group_ids.reserve(indices.size());
  for (size_t i : indices) part.group_ids.push_back(config.group_ids[i]);
  return part;
}

ReplicateConfig ConfigForKeys(const ReplicateConfig& config, size_t begin, size_t end) {
  ReplicateConfig part = config;
  if (config.group_ids.empty()) return part;
  part.group_ids.assign(config.group_ids.begin() + static_cast<std::ptrdiff_t>(begin),
                        config.group_ids.begin() + static_cast<std::ptrdiff_t>(end));
  return part;
}

}  // namespace kvpool::client
