// MasterCore's part in the segment hosts' disk tiers: the host copies objects to its disk
// segment and reports them (TIER_UPDATE added), evicts its own least recently used ones and
// reports them too (dropped). The master never places on a disk segment and never evicts from
// it; an object evicted from DRAM that has a disk replica stays there (eviction.h). See
// docs/architecture.md, "Disk tier".
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>

#include "common/keys.h"
#include "master/master_core.h"

namespace kvpool::master {

Result<rpc::CodesReply> MasterCore::TierUpdate(const rpc::TierUpdate& req, TimePoint now) {
  if (req.client_id().empty()) {
    return Status(ErrorCode::INVALID_PARAMS, "tier update: client_id is empty");
  }
  clients_.Touch(req.client_id(), now, /*make_known=*/false);
  uint64_t capacity = 0;
  auto seg = registry_.DiskSegment(req.segment_name(), req.client_id(), &capacity);
  if (!seg.ok()) return seg.status();
  const int64_t now_ns = ToNanos(now);
  rpc::CodesReply reply;
  auto each = [&](const rpc::StoredObject& so, bool add) {
    ErrorCode code;
    if (!ValidateKey(so.key()).ok()) {
      code = ErrorCode::INVALID_KEY;
    } else if (add && !registry_.RangeFits(capacity, so.offset(), so.size())) {
      // A range outside the disk segment would send readers (and a later FREE) to bytes the
      // tier does not hold: never listed.
      code = ErrorCode::INVALID_PARAMS;
    } else {
      auto shard = table_.Lock(so.key());
      code = add ? AddDiskReplica(*shard, so, *seg) : DropDiskReplica(*shard, so, *seg, now_ns);
    }
    reply.add_codes(static_cast<int32_t>(code));
  };
  for (const rpc::StoredObject& so : req.added()) each(so, true);
  for (const rpc::StoredObject& so : req.dropped()) each(so, false);
  return reply;
}

ErrorCode MasterCore::AddDiskReplica(ObjectTable::Shard& shard, const rpc::StoredObject& so,
                                     uint64_t segment_id) {
  Object* o = shard.Find(so.key());
  if (o == nullptr || o->pending()) return ErrorCode::OBJECT_NOT_FOUND;
  if (o->size != so.size() || so.checksum() == 0 || o->checksum != so.checksum()) {
    return ErrorCode::INVALID_PARAMS;  // other bytes than the object's: never listed
  }
  for (const ReplicaRef& r : o->replicas()) {
    if (r.segment_id == segment_id) return ErrorCode::OBJECT_ALREADY_EXISTS;
  }
  if (o->replicas().size() >= kMaxReplicas) return ErrorCode::OBJECT_ALREADY_EXISTS;
  // Re-creating the object would drop its readers' holds: a held one waits for a retry.
  if (o->held) return ErrorCode::OBJECT_HAS_LEASE;
  std::array<ReplicaRef, kMaxReplicas> refs;
  size_t n = 0;
  for (const ReplicaRef& r : o->replicas()) refs[n++] = r;
  refs[n++] = ReplicaRef{segment_id, so.offset(), 0, kTierDisk};
  ObjectPtr merged = WithReplicas(*o, std::span<const ReplicaRef>(refs.data(), n));
  shard.Erase(o);
  shard.Insert(std::move(merged));
  registry_.CountDiskReplica(segment_id, so.size(), /*added=*/true);
  RecordStored(events_, so.key(), KvMedium::kDisk);
  return ErrorCode::OK;
}

ErrorCode MasterCore::DropDiskReplica(ObjectTable::Shard& shard, const rpc::StoredObject& so,
                                      uint64_t segment_id, int64_t now_ns) {
  Object* o = shard.Find(so.key());
  if (o == nullptr) return ErrorCode::OBJECT_NOT_FOUND;
  std::array<ReplicaRef, kMaxReplicas> kept;
  size_t n = 0;
  bool found = false;
  for (const ReplicaRef& r : o->replicas()) {
    if (r.segment_id == segment_id && r.offset == so.offset()) {
      found = true;
    } else {
      kept[n++] = r;
    }
  }
  if (!found) return ErrorCode::OBJECT_NOT_FOUND;
  // A reader may be moving these very bytes; `held` also covers lapsed leases not yet swept,
  // whose holds a re-created object would lose.
  if (o->leased(now_ns) || o->held) return ErrorCode::OBJECT_HAS_LEASE;
  registry_.CountDiskReplica(segment_id, o->size, /*added=*/false);
  RecordRemoved(events_, so.key(), false,
                !HasTier(std::span<const ReplicaRef>(kept.data(), n), kTierDisk),
                KvRemoval::kEvictedDisk);
  if (n == 0) {
    shard.Erase(o);  // its only copy: the object is gone
    return ErrorCode::OK;
  }
  ObjectPtr rest = WithReplicas(*o, std::span<const ReplicaRef>(kept.data(), n));
  shard.Erase(o);
  shard.Insert(std::move(rest));
  return ErrorCode::OK;
}

}  // namespace kvpool::master
