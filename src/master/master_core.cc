#include "master/master_core.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "common/keys.h"
#include "common/tenant_key.h"
#include "rpc/endpoint.h"

namespace kvpool::master {
namespace {

int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

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

void SetResult(rpc::PutStartResult* out, ErrorCode code, std::string message) {
  out->set_code(static_cast<int32_t>(code));
  out->set_message(std::move(message));
}

void AddCode(rpc::CodesReply* reply, ErrorCode code, std::string message) {
  reply->add_codes(static_cast<int32_t>(code));
  reply->add_messages(std::move(message));
}

}  // namespace

struct MasterCore::PutContext {
  uint32_t writer;
  uint32_t replica_num;
  uint8_t flags;
  bool upsert;
  int64_t now_ns;
  uint64_t largest_segment;
  std::vector<std::string_view> preferred;
  std::string_view client_host;
  bool prefer_same_host;
  int64_t soft_pin_ttl_ns;         // 0: a soft pin never lapses
  bool keep_soft_pin;              // upsert: the replaced object's soft pin carries over
  std::vector<uint64_t> excluded;  // ReplicateConfig.excluded_segments, as ids
};

// What an upsert takes over from the object it replaces (Mooncake's semantics): its hard pin
// always, its soft pin and that pin's expiry when the put asks to keep it.
struct MasterCore::Carried {
  uint8_t flags = 0;
  int64_t soft_pin_until_ns = 0;  // 0: the carried soft pin never lapses
};

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

Result<rpc::MountSegmentReply> MasterCore::MountSegment(const rpc::MountSegment& req,
                                                        TimePoint now) {
  if (req.client_id().empty()) {
    return Status(ErrorCode::INVALID_PARAMS, "mount: client_id is empty");
  }
  auto ep = rpc::ParseEndpoint(req.endpoint(), 0, "segment endpoint");
  if (!ep.ok()) return ep.status();
  auto t = clients_.Touch(req.client_id(), now, /*make_known=*/true);
  const bool restoring = req.objects_size() > 0 || req.more_objects();
  if (req.tier() > kTierDisk) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("segment={} mount: unknown tier {}", req.segment_name(), req.tier()));
  }
  auto mounted =
      registry_.Mount(req.segment_name(), req.client_id(), t.handle, req.endpoint(), req.size(),
                      req.incarnation(), /*accepting=*/!restoring, req.tier());
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

void MasterCore::FreeReplicas(const Object& o) {
  for (const ReplicaRef& r : o.replicas()) registry_.Free(r, o.size);
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

void MasterCore::FreeReplicasAfterReaders(const Object& o, int64_t now_ns) {
  if (!o.leased(now_ns)) {
    FreeReplicas(o);
    return;
  }
  // A reader granted a lease may still be copying these bytes: the space is handed out again
  // only when the lease ends (a transfer past it fails LEASE_EXPIRED in the reader), so the
  // reader sees the object's bytes, never the next object's (docs/architecture.md "Read leases").
  for (const ReplicaRef& r : o.replicas()) registry_.FreeLater(r, o.size, o.lease_until_ns());
}

Result<rpc::PutStartReply> MasterCore::PutStart(const rpc::PutStart& req, TimePoint now) {
  if (req.client_id().empty()) {
    return Status(ErrorCode::INVALID_PARAMS, "put start: client_id is empty");
  }
  const rpc::ReplicateConfig& cfg = req.config();
  uint32_t replica_num = std::max<uint32_t>(1, cfg.replica_num());
  if (replica_num > kMaxReplicas) {
    return Status(ErrorCode::INVALID_PARAMS, fmt::format("replica_num={} is above the limit of {}",
                                                         replica_num, kMaxReplicas));
  }
  PutContext ctx{
      clients_.Touch(req.client_id(), now, false).handle,
      replica_num,
      static_cast<uint8_t>((cfg.with_soft_pin() ? kSoftPin : 0) |
                           (cfg.with_hard_pin() ? kHardPin : 0)),
      req.upsert(),
      ToNanos(now),
      registry_.Usage().largest_segment,
      {cfg.preferred_segments().begin(), cfg.preferred_segments().end()},
      req.client_host(),
      cfg.prefer_alloc_in_same_node(),
      static_cast<int64_t>(std::min<uint64_t>(cfg.soft_pin_ttl_ms(), kMaxSoftPinTtlMs)) * 1000000,
      cfg.keep_soft_pin_on_upsert(),
      registry_.IdsOf(std::vector<std::string>(cfg.excluded_segments().begin(),
                                               cfg.excluded_segments().end()))};
  KVPOOL_RETURN_IF_ERROR(ValidateGroupIds(req));
  rpc::PutStartReply reply;
  reply.mutable_results()->Reserve(req.items_size());
  BatchEviction eviction;
  for (int i = 0; i < req.items_size(); ++i) {
    std::string_view group = cfg.group_ids_size() > 0 ? cfg.group_ids(i) : std::string_view();
    *reply.add_results() = PutOne(req.items(i), ctx, &eviction, group);
  }
  return reply;
}

Status MasterCore::ValidateGroupIds(const rpc::PutStart& req) {
  const auto& ids = req.config().group_ids();
  if (ids.empty()) return Status::Ok();
  if (ids.size() != req.items_size()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("group_ids has {} entries for {} keys: give one per key, or none",
                              ids.size(), req.items_size()));
  }
  for (int i = 0; i < ids.size(); ++i) {
    if (ids[i].empty() || ids[i].size() > kMaxKeyBytes) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("group_ids[{}] (key={}) is {} bytes: a group id is 1..{} bytes", i,
                                req.items(i).key(), ids[i].size(), kMaxKeyBytes));
    }
  }
  return Status::Ok();
}

void MasterCore::JoinGroup(ObjectTable::Shard& shard, std::string_view key,
                           const std::string& group) {
  Object* obj = shard.Find(key);
  if (obj == nullptr || (obj->flags & kGrouped) != 0) return;  // in a group already: stays there
  table_.groups().Join(group, key);
  obj->flags |= kGrouped;
}

bool MasterCore::GroupIsFullFor(ObjectTable::Shard& shard, std::string_view key,
                                const std::string& group) {
  if (table_.groups().MemberCount(group) < ObjectGroups::kMaxMembers) return false;
  const Object* obj = shard.Find(key);
  // A member's own put (a retry, an upsert) takes no new place in the group.
  return obj == nullptr || (obj->flags & kGrouped) == 0 || table_.groups().GroupOf(key) != group;
}

rpc::PutStartResult MasterCore::PutOne(const rpc::PutItem& item, const PutContext& ctx,
                                       BatchEviction* eviction, std::string_view group_id) {
  rpc::PutStartResult out;
  Status st = ValidateKey(item.key());
  if (!st.ok()) {
    SetResult(&out, st.code(), st.message());
    return out;
  }
  if (item.size() == 0) {
    SetResult(&out, ErrorCode::INVALID_PARAMS, fmt::format("key={} size is 0", item.key()));
    return out;
  }
  const std::string_view tenant = TenantOf(item.key());
  const std::optional<uint64_t> quota = QuotaOf(tenant);
  const uint64_t quota_need = item.size() * ctx.replica_num;
  if (quota && quota_need > *quota) {
    // No eviction of the tenant's own objects can make room: fail at once.
    Refuse(RefusalReason::kTenantQuota);
    SetQuotaExceeded(item, tenant, *quota, /*whole=*/true, &out);
    return out;
  }
  const std::string group =
      group_id.empty() ? std::string() : ObjectGroups::Scoped(tenant, group_id);
  uint64_t over_quota = 0;
  Carried carried;
  for (int attempt = 0;; ++attempt) {
    {
      auto shard = table_.Lock(item.key());
      if (!group.empty() && GroupIsFullFor(*shard, item.key(), group)) {
        // Before anything is reserved or replaced. The cap bounds the work a member's lookup,
        // eviction and removal do for its group (each walks the member list).
        SetResult(&out, ErrorCode::INVALID_PARAMS,
                  fmt::format("key={}: group {} has {} members, the most a group may have",
                              item.key(), group_id, ObjectGroups::kMaxMembers));
        return out;
      }
      if (ResolveExisting(*shard, shard->Find(item.key()), ctx, &out, &carried)) {
        if (!group.empty() && out.already_exists()) JoinGroup(*shard, item.key(), group);
        return out;
      }
      over_quota = quota ? QuotaExcess(tenant, quota_need, *quota) : 0;
      if (over_quota == 0 && TryPlace(*shard, item, ctx, carried, &out)) {
        if (!group.empty() && out.code() == 0) JoinGroup(*shard, item.key(), group);
        return out;
      }
    }
    if (over_quota > 0) {
      // Over the tenant's quota: evict the tenant's own least recently used objects (never
      // another tenant's), once, then give up.
      if (attempt > 0) break;
      evictor_.Evict(over_quota, std::nullopt, ctx.now_ns, tenant, Nanos(options_.eviction_min_age),
                     /*young_too=*/true, KvRemoval::kEvictedTenantQuota);
      continue;
    }
    // No space. Evict (outside the shard lock: eviction takes every shard's) and retry once,
    // unless an eviction of this batch already found nothing to free.
    if (attempt >= kPutEvictionAttempts || !eviction->may_evict) break;
    if (!registry_.AnyAccepting()) {
      // Every segment is restoring (a master restart) or draining: room made by eviction could
      // not be used, and evicting would destroy objects that are about to be readable again.
      Refuse(RefusalReason::kNoSegment);
      SetResult(&out, ErrorCode::NO_AVAILABLE_HANDLE,
                fmt::format("key={} size={}: no segment takes new replicas right now (restoring "
                            "after a master restart, or draining)",
                            item.key(), item.size()));
      return out;
    }
    const uint64_t capacity = registry_.Usage().capacity;
    const uint64_t base = registry_.Reserved(item.size()) * ctx.replica_num;
    const uint64_t need = base > (capacity >> attempt) ? capacity : base << attempt;
    uint64_t ratio_bytes =
        static_cast<uint64_t>(options_.eviction_ratio * static_cast<double>(capacity));
    // Synchronous eviction: least recently used first, young objects too (the put needs the room
    // now), every unleased object a candidate. Retried, with twice the target each time, while it
    // frees something: a concurrent put may take the room first, or the freed space may be on
    // the wrong segments or in holes too small for this object.
    EvictionResult r = evictor_.Evict(std::max(need, ratio_bytes), std::nullopt, ctx.now_ns,
                                      std::nullopt, Nanos(options_.eviction_min_age),
                                      /*young_too=*/true);
    if (r.objects == 0) eviction->may_evict = false;
    if (r.offload_pending > 0) eviction->offload_pending = true;
  }
  if (over_quota > 0) {
    Refuse(RefusalReason::kTenantQuota);
    SetQuotaExceeded(item, tenant, *quota, /*whole=*/false, &out);
    return out;
  }
  if (eviction->offload_pending) {
    Refuse(RefusalReason::kOffloadPending);
    SetResult(&out, ErrorCode::NO_AVAILABLE_HANDLE,
              fmt::format("key={} size={}: the pool is full of objects still being copied to "
                          "their node's disk tier (asked again shortly, room will be made)",
                          item.key(), item.size()));
    out.set_offload_pending(true);
    return out;
  }
  Refuse(RefusalReason::kLeasedOrPinned);
  SetResult(&out, ErrorCode::NO_AVAILABLE_HANDLE,
            fmt::format("key={} size={}: the pool is full and nothing in it may be evicted: every "
                        "complete object is leased by a transfer in flight or hard-pinned, or "
                        "the rest is being written ({} leases hold {} bytes)",
                        item.key(), item.size(), leases_.held(), leases_.bytes()));
  spdlog::warn("put start key={} error={}", item.key(),
               ErrorCodeName(static_cast<ErrorCode>(out.code())));
  return out;
}

std::optional<uint64_t> MasterCore::QuotaOf(std::string_view tenant) const {
  if (options_.tenant_quotas.empty()) return std::nullopt;
  auto it = options_.tenant_quotas.find(tenant);
  if (it == options_.tenant_quotas.end()) return std::nullopt;
  return it->second;
}

void MasterCore::SetQuotaExceeded(const rpc::PutItem& item, std::string_view tenant, uint64_t quota,
                                  bool whole, rpc::PutStartResult* out) const {
  std::string_view name = tenant.empty() ? "default" : tenant;
  if (whole) {
    SetResult(out, ErrorCode::TENANT_QUOTA_EXCEEDED,
              fmt::format("key={} size={}: its replicas are above the whole quota of tenant "
                          "'{}' ({} bytes)",
                          UserKeyOf(item.key()), item.size(), name, quota));
    return;
  }
  SetResult(out, ErrorCode::TENANT_QUOTA_EXCEEDED,
            fmt::format("key={} size={}: tenant '{}' uses {} of its {} bytes quota and has "
                        "nothing more it may evict (objects leased, pinned or being written)",
                        UserKeyOf(item.key()), item.size(), name,
                        table_.tenants().Usage(tenant).bytes, quota));
}

uint64_t MasterCore::QuotaExcess(std::string_view tenant, uint64_t need, uint64_t quota) const {
  uint64_t used = table_.tenants().Usage(tenant).bytes;
  return used + need > quota ? used + need - quota : 0;
}

bool MasterCore::ResolveExisting(ObjectTable::Shard& shard, Object* obj, const PutContext& ctx,
                                 rpc::PutStartResult* out, Carried* carried) {
  if (obj == nullptr) return false;
  if (obj->pending()) {
    if (ctx.now_ns - obj->put_start_ns() < discard_ns_) {
      if (ctx.upsert) {
        SetResult(out, ErrorCode::REPLICA_IS_NOT_READY,
                  fmt::format("key={} is being written by another put", obj->key()));
      } else {
        out->set_already_exists(true);
      }
      return true;
    }
    // A stale reservation: take the key. Its writer may still be sending bytes.
    FreeUnfinishedPut(*obj, ctx.now_ns);
    spdlog::info("key={} stale reservation discarded (age {} ms)", obj->key(),
                 (ctx.now_ns - obj->put_start_ns()) / 1000000);
    shard.Erase(obj);
    return false;
  }
  if (!ctx.upsert) {
    out->set_already_exists(true);
    return true;
  }
  if (obj->leased(ctx.now_ns)) {
    // Mooncake's code for an upsert under a reader (a remove there says OBJECT_HAS_LEASE).
    SetResult(out, ErrorCode::OBJECT_REPLICA_BUSY,
              fmt::format("key={} is leased by a reader for {} ms more; upsert later", obj->key(),
                          (obj->lease_until_ns() - ctx.now_ns) / 1000000));
    return true;
  }
  carried->flags = obj->flags & kHardPin;
  if (ctx.keep_soft_pin && obj->soft_pinned()) {
    carried->flags |= kSoftPin;
    carried->soft_pin_until_ns = shard.SoftPinUntil(obj);
  }
  FreeReplicas(*obj);
  // Routers learn of the old bytes' end here; the new ones are stored at their put end.
  RecordRemovedObject(*obj, KvRemoval::kRemoved);
  shard.Erase(obj);
  return false;
}

bool MasterCore::TryPlace(ObjectTable::Shard& shard, const rpc::PutItem& item,
                          const PutContext& ctx, const Carried& carried, rpc::PutStartResult* out) {
  uint64_t reserved = registry_.Reserved(item.size());
  if (ctx.largest_segment == 0) {
    Refuse(RefusalReason::kNoSegment);
    SetResult(out, ErrorCode::NO_AVAILABLE_HANDLE,
              fmt::format("key={}: no segment is mounted", item.key()));
    return true;
  }
  if (reserved > ctx.largest_segment || reserved < item.size()) {
    // No eviction can help (evicting would only destroy data): fail at once. A larger segment
    // may still be mounted later, hence a retryable code.
    Refuse(RefusalReason::kNoSegment);
    SetResult(out, ErrorCode::NO_AVAILABLE_HANDLE,
              fmt::format("key={} size={} exceeds the largest mounted segment ({} bytes)",
                          item.key(), item.size(), ctx.largest_segment));
    return true;
  }
  PlacementRequest request;
  request.preferred = ctx.preferred;
  request.strategy = strategy_;
  request.client_host = ctx.client_host;
  request.prefer_same_host = ctx.prefer_same_host;
  request.excluded = ctx.excluded;
  std::vector<Placement> placed = registry_.AllocateReplicas(item.size(), ctx.replica_num, request);
  if (placed.empty()) return false;
  std::vector<ReplicaRef> refs;
  refs.reserve(placed.size());
  for (const Placement& p : placed) refs.push_back(p.ref);
  ObjectPtr obj = Object::Create(item.key(), item.size(), refs);
  obj->writer = ctx.writer;
  obj->state = ObjectState::kPending;
  obj->stamp_ns = ctx.now_ns;
  obj->set_last_access_ns(ctx.now_ns);
  obj->flags = ctx.flags | carried.flags;
  Object* placed_obj = shard.Insert(std::move(obj));
  if ((carried.flags & kSoftPin) != 0) {
    if (carried.soft_pin_until_ns > 0)
      shard.SetSoftPinExpiry(placed_obj, carried.soft_pin_until_ns);
  } else if ((ctx.flags & kSoftPin) != 0 && ctx.soft_pin_ttl_ns > 0) {
    shard.SetSoftPinExpiry(placed_obj, ctx.now_ns + ctx.soft_pin_ttl_ns);
  }
  for (Placement& p : placed) {
    rpc::Replica* r = out->add_replicas();
    r->set_segment_name(std::move(p.segment_name));
    r->set_endpoint(std::move(p.endpoint));
    r->set_segment_incarnation(p.incarnation);
    r->set_offset(p.ref.offset);
    r->set_length(item.size());
  }
  return true;
}

Result<rpc::CodesReply> MasterCore::PutEnd(const rpc::PutEnd& req, TimePoint now) {
  if (req.client_id().empty()) {
    return Status(ErrorCode::INVALID_PARAMS, "put end: client_id is empty");
  }
  uint32_t writer = clients_.Touch(req.client_id(), now, false).handle;
  int64_t now_ns = ToNanos(now);
  for (const std::string& name : req.unreachable_segments()) {
    if (registry_.MarkSuspect(name)) {
      spdlog::warn(
          "segment={} reported unreachable by client={}: no new replicas there until "
          "its host pings again",
          name, req.client_id());
    }
  }
  rpc::CodesReply reply;
  for (int i = 0; i < req.commit_keys_size(); ++i) {
    const std::string& key = req.commit_keys(i);
    uint64_t checksum = i < req.commit_checksums_size() ? req.commit_checksums(i) : 0;
    std::string msg;
    ErrorCode code = Commit(key, writer, checksum, now_ns, &msg);
    AddCode(&reply, code, std::move(msg));
  }
  for (const std::string& key : req.revoke_keys()) {
    std::string msg;
    ErrorCode code = Revoke(key, writer, now_ns, &msg);
    AddCode(&reply, code, std::move(msg));
  }
  return reply;
}

ErrorCode MasterCore::Commit(std::string_view key, uint32_t writer, uint64_t checksum,
                             int64_t now_ns, std::string* msg) {
  Status st = ValidateKey(key);
  if (!st.ok()) {
    *msg = st.message();
    return st.code();
  }
  auto shard = table_.Lock(key);
  Object* obj = shard->Find(key);
  if (obj == nullptr) {
    *msg = fmt::format("key={} has no pending put (revoked, reclaimed or never started)", key);
    return ErrorCode::OBJECT_NOT_FOUND;
  }
  if (obj->writer != writer) {
    *msg = fmt::format("key={} is being put by another client", key);
    return ErrorCode::ILLEGAL_CLIENT;
  }
  if (obj->pending()) {
    obj->checksum = checksum;
    shard->MarkComplete(obj);
    obj->set_last_access_ns(now_ns);
    // The segments' hosts learn of it through their journals (master restart without loss).
    for (const ReplicaRef& r : obj->replicas()) {
      registry_.RecordCommit(r, key, obj->size, obj->checksum, obj->flags & (kSoftPin | kHardPin));
    }
    RecordStored(events_, key, KvMedium::kDram);  // the master places on DRAM segments only
  }
  return ErrorCode::OK;
}

ErrorCode MasterCore::Revoke(std::string_view key, uint32_t writer, int64_t now_ns,
                             std::string* msg) {
  Status st = ValidateKey(key);
  if (!st.ok()) {
    *msg = st.message();
    return st.code();
  }
  auto shard = table_.Lock(key);
  Object* obj = shard->Find(key);
  if (obj == nullptr) {
    *msg = fmt::format("key={} has no pending put", key);
    return ErrorCode::OBJECT_NOT_FOUND;
  }
  if (obj->writer != writer) {
    *msg = fmt::format("key={} is being put by another client", key);
    return ErrorCode::ILLEGAL_CLIENT;
  }
  if (!obj->pending()) {
    *msg = fmt::format("key={} is complete; use remove", key);
    return ErrorCode::INVALID_WRITE;
  }
  FreeUnfinishedPut(*obj, now_ns);
  shard->Erase(obj);
  return ErrorCode::OK;
}

rpc::GetReplicaListReply MasterCore::GetReplicaList(const rpc::KeysRequest& req, TimePoint now) {
  const int64_t now_ns = ToNanos(now);
  rpc::GetReplicaListReply reply;
  // A lease lasts until its reader releases it, at most the TTL, or until its client is
  // declared dead: the reader checks its transfer against both (client/get_path.cc).
  reply.set_lease_ttl_ms(static_cast<uint64_t>(options_.default_kv_lease_ttl.count()));
  reply.mutable_objects()->Reserve(req.keys_size());
  Lease lease;
  std::vector<std::string_view> grouped;  // leased objects with group peers to hold too
  if (!req.no_lease()) {
    lease.client = req.client_id().empty() ? 0 : clients_.Touch(req.client_id(), now, false).handle;
    lease.expiry_ns = now_ns + lease_ns_;
    reply.set_client_handle(lease.client);
    reply.set_client_ttl_ms(
        static_cast<uint64_t>(std::chrono::milliseconds(options_.client_ttl).count()));
  }
  for (const std::string& key : req.keys()) {
    rpc::ObjectLocation* loc = reply.add_objects();
    Status st = ValidateKey(key);
    if (!st.ok()) {
      loc->set_code(static_cast<int32_t>(st.code()));
      loc->set_message(st.message());
      continue;
    }
    const HashedKey hashed(key);
    auto shard = table_.Lock(hashed);
    Object* obj = shard->Find(hashed);
    ErrorCode code = ErrorCode::OK;
    if (obj == nullptr) {
      code = ErrorCode::OBJECT_NOT_FOUND;
    } else if (obj->pending()) {
      code = ErrorCode::REPLICA_IS_NOT_READY;
    } else {
      // DRAM replicas first, then disk tiers: readers try them in this order (ties of
      // distance keep it, client/replica_order.h).
      std::array<ReplicaRef, kMaxReplicas> ordered;
      size_t n = 0;
      for (uint32_t tier : {kTierDram, kTierDisk}) {
        for (const ReplicaRef& r : obj->replicas()) {
          if (r.tier == tier) ordered[n++] = r;
        }
      }
      for (const ReplicaRef& r : std::span(ordered.data(), n)) {
        rpc::Replica* out = loc->add_replicas();
        if (r.tier != kTierDram) out->set_tier(r.tier);
        uint64_t incarnation = 0;
        if (!registry_.Describe(r.segment_id, out->mutable_segment_name(), out->mutable_endpoint(),
                                &incarnation)) {
          loc->mutable_replicas()->RemoveLast();
          continue;
        }
        out->set_segment_incarnation(incarnation);
        out->set_offset(r.offset);
        out->set_length(obj->size);
      }
      if (loc->replicas_size() == 0) code = ErrorCode::REPLICA_IS_GONE;
    }
    if (code != ErrorCode::OK) {
      loc->set_code(static_cast<int32_t>(code));
      loc->set_message(fmt::format("key={} error={}", key, ErrorCodeName(code)));
      continue;
    }
    loc->set_size(obj->size);
    loc->set_checksum(obj->checksum);
    if (!req.no_lease()) {
      if ((obj->flags & kGrouped) != 0) grouped.push_back(key);
      lease.holds.push_back(ShardHold{static_cast<uint32_t>(ObjectTable::ShardOfHash(hashed.hash)),
                                      shard->Hold(obj, lease.expiry_ns)});
      lease.bytes += obj->size;
      obj->set_last_access_ns(now_ns);
      obj->flags |= kAsked;
    }
  }
  if (!grouped.empty()) HoldGroupPeers(grouped, req, &lease);
  if (!lease.holds.empty()) reply.set_lease_id(leases_.Add(std::move(lease)));
  return reply;
}

rpc::CodesReply MasterCore::Exists(const rpc::KeysRequest& req, TimePoint now) {
  std::vector<std::string_view> keys(req.keys().begin(), req.keys().end());
  return Exists(keys, now);
}

rpc::CodesReply MasterCore::Exists(std::span<const std::string_view> keys, TimePoint now) {
  const int64_t now_ns = ToNanos(now);
  rpc::CodesReply reply;
  reply.mutable_codes()->Reserve(static_cast<int>(keys.size()));
  // Messages only once a key is invalid (then one per key, as the reply promises): an empty
  // string per key would cost an allocation each here and in the client's parse.
  for (std::string_view key : keys) {
    Status st = ValidateKey(key);
    if (!st.ok()) {
      while (reply.messages_size() < reply.codes_size()) reply.add_messages();
      AddCode(&reply, st.code(), st.message());
      continue;
    }
    const HashedKey hashed(key);
    auto shard = table_.Lock(hashed);
    Object* obj = shard->Find(hashed);
    const bool found = obj != nullptr && !obj->pending();
    if (found) {
      // A reader found it and is likely to get it next (HiCache asks exists, then gets the
      // leading pages it found): eviction takes it after objects nobody asked for.
      obj->set_last_access_ns(now_ns);
      obj->flags |= kAsked;
    }
    reply.add_codes(found ? 1 : 0);
    if (reply.messages_size() > 0) reply.add_messages();
  }
  return reply;
}

rpc::ExistsPrefixReply MasterCore::ExistsPrefix(const rpc::KeysRequest& req, TimePoint now) {
  const int64_t now_ns = ToNanos(now);
  uint32_t count = 0;
  for (const std::string& key : req.keys()) {
    if (!ValidateKey(key).ok()) break;
    auto shard = table_.Lock(key);
    Object* obj = shard->Find(key);
    if (obj == nullptr || obj->pending()) break;
    obj->set_last_access_ns(now_ns);  // as Exists: found, likely read next
    obj->flags |= kAsked;
    ++count;
  }
  rpc::ExistsPrefixReply reply;
  reply.set_count(count);
  return reply;
}

rpc::CodesReply MasterCore::Remove(const rpc::KeysRequest& req, TimePoint now) {
  const int64_t now_ns = ToNanos(now);
  rpc::CodesReply reply;
  for (const std::string& key : req.keys()) {
    std::string msg;
    ErrorCode code = RemoveOne(key, req.force(), now_ns, &msg);
    AddCode(&reply, code, std::move(msg));
  }
  return reply;
}

ErrorCode MasterCore::RemoveOne(std::string_view key, bool force, int64_t now_ns,
                                std::string* msg) {
  Status st = ValidateKey(key);
  if (!st.ok()) {
    *msg = st.message();
    return st.code();
  }
  auto shard = table_.Lock(key);
  Object* obj = shard->Find(key);
  if (obj == nullptr) {
    *msg = fmt::format("key={} not found", key);
    return ErrorCode::OBJECT_NOT_FOUND;
  }
  if (obj->pending()) {
    *msg = fmt::format("key={} is still being written", key);
    return ErrorCode::REPLICA_IS_NOT_READY;
  }
  if (obj->leased(now_ns) && !force) {
    *msg = fmt::format("key={} is leased by a reader; retry later or use force", key);
    return ErrorCode::OBJECT_HAS_LEASE;
  }
  FreeReplicasAfterReaders(*obj, now_ns);
  RecordRemovedObject(*obj, KvRemoval::kRemoved);
  shard->Erase(obj);
  return ErrorCode::OK;
}

rpc::RemoveAllReply MasterCore::RemoveAll(const rpc::RemoveAll& req, TimePoint now,
                                          std::string_view tenant) {
  const int64_t now_ns = ToNanos(now);
  uint64_t removed = 0;
  for (size_t i = 0; i < ObjectTable::kShards; ++i) {
    auto shard = table_.LockIndex(i);
    removed += shard->EraseIf([&](Object& o) {
      if (TenantOf(o.key()) != tenant) return false;
      if (o.pending() || (o.leased(now_ns) && !req.force())) return false;
      FreeReplicasAfterReaders(o, now_ns);
      RecordRemovedObject(o, KvRemoval::kRemoved);
      return true;
    });
  }
  spdlog::info("remove all tenant={} force={} removed={}", tenant.empty() ? "default" : tenant,
               req.force(), removed);
  rpc::RemoveAllReply reply;
  reply.set_removed(removed);
  return reply;
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
