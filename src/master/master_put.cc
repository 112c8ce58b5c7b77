// MasterCore's puts: PUT_START (placement, upserts, groups, quotas, eviction for room) and
// PUT_END (commit into the segments' journals, or revoke).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/keys.h"
#include "common/tenant_key.h"
#include "master/master_core.h"
#include "master/master_core_internal.h"
#include "rpc/grant.h"

namespace kvpool::master {

Result<rpc::PutStartReply> MasterCore::PutStart(const rpc::PutStart& req, TimePoint now,
                                                std::vector<JournalMark>* frees) {
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
      registry_.IdsOf(
          std::vector<std::string>(cfg.excluded_segments().begin(), cfg.excluded_segments().end())),
      frees};
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
  FreeReplicas(*obj, ctx.frees);
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
    if (p.records_writes) {
      r->set_host_records_writes(true);
      r->set_journal_seq(p.journal_seq);
      r->set_master_epoch(epoch_);
    }
  }
  return true;
}

Result<rpc::CodesReply> MasterCore::PutEnd(const rpc::PutEnd& req, TimePoint now,
                                           std::vector<JournalMark>* marks) {
  if (req.client_id().empty()) {
    return Status(ErrorCode::INVALID_PARAMS, "put end: client_id is empty");
  }
  uint32_t writer = clients_.Touch(req.client_id(), now, false).handle;
  int64_t now_ns = ToNanos(now);
  for (const std::string& name : req.unreachable_segments()) {
    if (registry_.MarkSuspect(name, req.client_id(), static_cast<int64_t>(rpc::UnixMillisNow()))) {
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
    // A host already lists it (it recorded the WRITE): nothing to wait for.
    const bool recorded = i < req.recorded_by_host_size() && req.recorded_by_host(i);
    std::string msg;
    ErrorCode code = Commit(key, writer, checksum, now_ns, &msg, i, recorded ? nullptr : marks);
    AddCode(&reply, code, std::move(msg));
  }
  for (const std::string& key : req.revoke_keys()) {
    std::string msg;
    ErrorCode code = Revoke(key, writer, now_ns, &msg);
    AddCode(&reply, code, std::move(msg));
  }
  return reply;
}

Object* MasterCore::WritersObject(ObjectTable::Shard& shard, std::string_view key, uint32_t writer,
                                  std::string_view missing, ErrorCode* code, std::string* msg) {
  Object* obj = shard.Find(key);
  if (obj == nullptr) {
    *msg = fmt::format("key={} has no pending put{}", key, missing);
    *code = ErrorCode::OBJECT_NOT_FOUND;
  } else if (obj->writer != writer) {
    *msg = fmt::format("key={} is being put by another client", key);
    *code = ErrorCode::ILLEGAL_CLIENT;
    obj = nullptr;
  }
  return obj;
}

ErrorCode MasterCore::Commit(std::string_view key, uint32_t writer, uint64_t checksum,
                             int64_t now_ns, std::string* msg, uint32_t index,
                             std::vector<JournalMark>* marks) {
  if (ErrorCode bad = KeyError(key, msg); bad != ErrorCode::OK) return bad;
  auto shard = table_.Lock(key);
  ErrorCode code = ErrorCode::OK;
  Object* obj =
      WritersObject(*shard, key, writer, " (revoked, reclaimed or never started)", &code, msg);
  if (obj == nullptr) return code;
  if (obj->pending()) {
    obj->checksum = checksum;
    shard->MarkComplete(obj);
    obj->set_last_access_ns(now_ns);
    // The segments' hosts learn of it through their journals (master restart without loss).
    for (const ReplicaRef& r : obj->replicas()) {
      uint64_t seq = registry_.RecordCommit(r, key, obj->size, obj->checksum,
                                            obj->flags & (kSoftPin | kHardPin));
      if (marks != nullptr && seq != 0) marks->push_back({index, r.segment_id, seq});
    }
    RecordStored(events_, key, KvMedium::kDram);  // the master places on DRAM segments only
  }
  return ErrorCode::OK;
}

ErrorCode MasterCore::Revoke(std::string_view key, uint32_t writer, int64_t now_ns,
                             std::string* msg) {
  if (ErrorCode bad = KeyError(key, msg); bad != ErrorCode::OK) return bad;
  auto shard = table_.Lock(key);
  ErrorCode code = ErrorCode::OK;
  Object* obj = WritersObject(*shard, key, writer, "", &code, msg);
  if (obj == nullptr) return code;
  if (!obj->pending()) {
    *msg = fmt::format("key={} is complete; use remove", key);
    return ErrorCode::INVALID_WRITE;
  }
  FreeUnfinishedPut(*obj, now_ns);
  shard->Erase(obj);
  return ErrorCode::OK;
}

}  // namespace kvpool::master
