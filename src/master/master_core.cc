// MasterCore: its construction, pings, segment mounts and unmounts, the freeing of replicas and
// Stat. Puts are in master_put.cc, lookups and removals in master_query.cc, the rest in the
// master_*.cc files master_core.h names.
#include "master/master_core.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "master/master_core_internal.h"
#include "rpc/endpoint.h"

namespace kvpool::master {
namespace {

// ValidateMasterOptions has checked the name; an unchecked one falls back to random.
PlacementStrategy StrategyOf(const MasterOptions& o) {
  auto s = ParsePlacementStrategy(o.placement_strategy);
  return s.ok() ? *s : PlacementStrategy::kRandom;
}

uint64_t RandomEpoch() {
  std::random_device rd;
  uint64_t e = 0;
  while (e == 0) e = (uint64_t{rd()} << 32) ^ rd();
  return e;
}

}  // namespace

MasterCore::MasterCore(const MasterOptions& options, uint64_t epoch)
    : options_(options),
      epoch_(epoch != 0 ? epoch : RandomEpoch()),
      lease_ns_(Nanos(options.default_kv_lease_ttl)),
      discard_ns_(Nanos(options.put_start_discard_timeout_sec)),
      release_ns_(Nanos(options.put_start_release_timeout_sec)),
      strategy_(StrategyOf(options)),
      registry_(options.allocation_alignment),
      evictor_(&table_, &registry_, Nanos(options.disk_offload_wait)),
      leases_(RandomEpoch() >> 1) {}

Result<rpc::PingReply> MasterCore::Ping(const rpc::Ping& req, TimePoint now) {
  if (req.client_id().empty()) return Status(ErrorCode::INVALID_PARAMS, "ping: client_id is empty");
  auto t = clients_.Touch(req.client_id(), now, /*make_known=*/true);
  if (!t.was_known) spdlog::info("client={} registered", req.client_id());
  if (size_t n = registry_.ClearSuspect(t.handle); n > 0) {
    spdlog::info("client={} pinged: its {} segment(s) reported unreachable take replicas again",
                 req.client_id(), n);
  }
  rpc::PingReply reply;
  reply.set_master_epoch(epoch_);
  reply.set_client_known(t.was_known);
  reply.set_client_handle(t.handle);
  if (t.was_known) AddJournals(req, &reply);
  return reply;
}

Result<rpc::MountSegmentReply> MasterCore::MountSegment(const rpc::MountSegment& req, TimePoint now,
                                                        std::string_view from_host) {
  if (req.client_id().empty()) {
    return Status(ErrorCode::INVALID_PARAMS, "mount: client_id is empty");
  }
  auto ep = rpc::ParseEndpoint(req.endpoint(), 0, "segment endpoint");
  if (!ep.ok()) return ep.status();
  KVPOOL_RETURN_IF_ERROR(CheckNotServedByAnother(req, now, from_host));
  auto t = clients_.Touch(req.client_id(), now, /*make_known=*/true);
  const bool restoring = req.objects_size() > 0 || req.more_objects();
  if (req.tier() > kTierDisk) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("segment={} mount: unknown tier {}", req.segment_name(), req.tier()));
  }
  auto mounted = registry_.Mount(req.segment_name(), req.client_id(), t.handle, req.endpoint(),
                                 req.size(), req.incarnation(), /*accepting=*/!restoring,
                                 req.tier(), from_host, req.records_writes());
  if (!mounted.ok()) {
    spdlog::warn("segment={} client={} mount refused error={}", req.segment_name(), req.client_id(),
                 mounted.status().ToString());
    return mounted.status();
  }
  if (mounted->replaced != 0) {
    // Its host restarted: the old memory is gone, so are the objects and pending writes there.
    size_t dropped = DropReplicasAndWriters({mounted->replaced}, {}, ToNanos(now));
    spdlog::warn(
        "segment={} replaced: its host restarted with new memory (incarnation={:016x}); the old "
        "segment id={} and its objects_dropped={} are gone",
        req.segment_name(), req.incarnation(), mounted->replaced, dropped);
  }
  const uint64_t id = mounted->id;
  spdlog::info("segment={} client={} mounted endpoint={} size={} id={} incarnation={:016x}",
               req.segment_name(), req.client_id(), req.endpoint(), req.size(), id,
               req.incarnation());
  rpc::MountSegmentReply reply;
  reply.set_segment_id(id);
  reply.set_master_epoch(epoch_);
  if (restoring) reply.set_objects_restored(StageOrRestore(req, id, ToNanos(now)));
  return reply;
}

Status MasterCore::UnmountSegment(const rpc::UnmountSegment& req, TimePoint now) {
  if (req.client_id().empty()) {
    return Status(ErrorCode::INVALID_PARAMS, "unmount: client_id is empty");
  }
  clients_.Touch(req.client_id(), now, /*make_known=*/false);
  auto id = registry_.Unmount(req.segment_name(), req.client_id());
  if (!id.ok()) return id.status();
  size_t dropped = DropReplicasAndWriters({*id}, {}, ToNanos(now));
  spdlog::info("segment={} client={} unmounted objects_dropped={}", req.segment_name(),
               req.client_id(), dropped);
  return Status::Ok();
}

void MasterCore::NoteFree(std::vector<JournalMark>* frees, uint64_t segment_id, uint64_t seq) {
  if (frees == nullptr || seq == 0) return;
  for (JournalMark& m : *frees) {
    if (m.segment_id == segment_id) {
      m.seq = std::max(m.seq, seq);
      return;
    }
  }
  frees->push_back({static_cast<uint32_t>(frees->size()), segment_id, seq});
}

void MasterCore::FreeReplicas(const Object& o, std::vector<JournalMark>* frees) {
  for (const ReplicaRef& r : o.replicas()) NoteFree(frees, r.segment_id, registry_.Free(r, o.size));
}

void MasterCore::FreeUnfinishedPut(const Object& o, int64_t now_ns) {
  const int64_t release_at = o.put_start_ns() + release_ns_;
  for (const ReplicaRef& r : o.replicas()) {
    if (release_at <= now_ns) {
      registry_.Free(r, o.size);
    } else {
      registry_.FreeLater(r, o.size, release_at);
    }
  }
}

void MasterCore::FreeReplicasAfterReaders(const Object& o, int64_t now_ns,
                                          std::vector<JournalMark>* frees) {
  if (!o.leased(now_ns)) {
    FreeReplicas(o, frees);
    return;
  }
  // A reader granted a lease may still be copying these bytes: the space is handed out again
  // only when the lease ends (a transfer past it fails LEASE_EXPIRED in the reader), so the
  // reader sees the object's bytes, never the next object's (docs/architecture.md "Read leases").
  for (const ReplicaRef& r : o.replicas()) registry_.FreeLater(r, o.size, o.lease_until_ns());
}

rpc::StatReply MasterCore::Stat() const {
  rpc::StatReply reply;
  for (const SegmentStats& s : registry_.Stats()) {
    rpc::SegmentInfo* info = reply.add_segments();
    info->set_segment_name(s.name);
    info->set_endpoint(s.endpoint);
    info->set_client_id(s.client_id);
    info->set_size(s.capacity);
    info->set_used(s.used);
    info->set_object_count(s.replicas);
    info->set_draining(!s.accepting);
    info->set_incarnation(s.incarnation);
    info->set_tier(s.tier);
    info->set_suspect(s.suspect);
    info->set_unreachable_reports(s.unreachable_reports);
    info->set_last_unreachable_by(s.last_unreachable_by);
    info->set_last_unreachable_unix_ms(s.last_unreachable_unix_ms);
    if (s.tier != kTierDram) {
      reply.set_disk_capacity(reply.disk_capacity() + s.capacity);
      reply.set_disk_used(reply.disk_used() + s.used);
      reply.set_disk_replicas(reply.disk_replicas() + s.replicas);
      continue;
    }
    reply.set_capacity(reply.capacity() + s.capacity);
    reply.set_used(reply.used() + s.used);
  }
  reply.set_object_count(table_.size());
  reply.set_client_count(clients_.size());
  reply.set_evicted_total(evictor_.evicted_total());
  reply.set_master_epoch(epoch_);
  reply.set_leases_held(leases_.held());
  reply.set_bytes_leased(leases_.bytes());
  reply.set_refused_leased_or_pinned(refused(RefusalReason::kLeasedOrPinned));
  reply.set_refused_tenant_quota(refused(RefusalReason::kTenantQuota));
  reply.set_refused_no_segment(refused(RefusalReason::kNoSegment));
  reply.set_refused_offload_pending(refused(RefusalReason::kOffloadPending));
  return reply;
}

}  // namespace kvpool::master
