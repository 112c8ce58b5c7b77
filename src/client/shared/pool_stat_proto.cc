#include "client/shared/pool_stat_proto.h"

namespace kvpool::client {

PoolStat PoolStatFromProto(const rpc::StatReply& r) {
  PoolStat s;
  s.capacity = r.capacity();
  s.used = r.used();
  s.object_count = r.object_count();
  s.client_count = r.client_count();
  s.evicted_total = r.evicted_total();
  s.leases_held = r.leases_held();
  s.bytes_leased = r.bytes_leased();
  s.refused_leased_or_pinned = r.refused_leased_or_pinned();
  s.refused_tenant_quota = r.refused_tenant_quota();
  s.refused_no_segment = r.refused_no_segment();
  s.refused_offload_pending = r.refused_offload_pending();
  s.ha_role = r.ha_role();
  s.leader_epoch = r.leader_epoch();
  s.leader_address = r.leader_address();
  s.disk_capacity = r.disk_capacity();
  s.disk_used = r.disk_used();
  s.disk_replicas = r.disk_replicas();
  s.segments.reserve(r.segments_size());
  for (const auto& seg : r.segments()) {
    s.segments.push_back({seg.segment_name(), seg.endpoint(), seg.size(), seg.used(),
                          seg.object_count(), seg.tier()});
  }
  return s;
}

rpc::StatReply ToProto(const PoolStat& s) {
  rpc::StatReply r;
  r.set_capacity(s.capacity);
  r.set_used(s.used);
  r.set_object_count(s.object_count);
  r.set_client_count(s.client_count);
  r.set_evicted_total(s.evicted_total);
  r.set_leases_held(s.leases_held);
  r.set_bytes_leased(s.bytes_leased);
  r.set_refused_leased_or_pinned(s.refused_leased_or_pinned);
  r.set_refused_tenant_quota(s.refused_tenant_quota);
  r.set_refused_no_segment(s.refused_no_segment);
  r.set_refused_offload_pending(s.refused_offload_pending);
  r.set_ha_role(s.ha_role);
  r.set_leader_epoch(s.leader_epoch);
  r.set_leader_address(s.leader_address);
  r.set_disk_capacity(s.disk_capacity);
  r.set_disk_used(s.disk_used);
  r.set_disk_replicas(s.disk_replicas);
  for (const PoolSegmentStat& seg : s.segments) {
    rpc::SegmentInfo* info = r.add_segments();
    info->set_segment_name(seg.name);
    info->set_endpoint(seg.endpoint);
    info->set_size(seg.size);
    info->set_used(seg.used);
    info->set_object_count(seg.object_count);
    info->set_tier(seg.tier);
  }
  return r;
}

}  // namespace kvpool::client
