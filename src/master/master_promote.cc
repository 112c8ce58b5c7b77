// MasterCore's part in promotion: a segment host that serves an object from its disk tier
// often enough copies it back into its own DRAM segment. The master reserves the range (start),
// the host fills it from disk and checks it, and the master lists it as the object's first
// replica (commit), journaled to the host like any commit. Readers are sent to the DRAM copy
// from then on; the disk copy stays. See docs/architecture.md, "Disk tier".
#include <fmt/format.h>

#include <array>

#include "common/keys.h"
#include "master/master_core.h"

namespace kvpool::master {

Result<rpc::PromoteReply> MasterCore::Promote(const rpc::Promote& req, TimePoint now) {
  if (req.client_id().empty()) {
    return Status(ErrorCode::INVALID_PARAMS, "promote: client_id is empty");
  }
  clients_.Touch(req.client_id(), now, /*make_known=*/false);
  auto seg = registry_.OwnDramSegment(req.segment_name(), req.client_id());
  if (!seg.ok()) return seg.status();
  const int64_t now_ns = ToNanos(now);
  rpc::PromoteReply reply;
  for (const rpc::StoredObject& so : req.start()) {
    uint64_t offset = 0;
    ErrorCode code = ValidateKey(so.key()).ok() ? PromoteStart(so, *seg, now_ns, &offset)
                                                : ErrorCode::INVALID_KEY;
    reply.add_start_codes(static_cast<int32_t>(code));
    reply.add_start_offsets(offset);
  }
  for (const rpc::StoredObject& so : req.commit()) {
    reply.add_commit_codes(static_cast<int32_t>(PromoteCommit(so, *seg)));
  }
  for (const rpc::StoredObject& so : req.cancel()) {
    std::optional<ReservedPromotion> taken;
    {
      std::lock_guard lock(promotions_mu_);
      auto it = promotions_.find({*seg, so.offset()});
      if (it != promotions_.end() && it->second.key == so.key()) {
        taken = std::move(it->second);
        promotions_.erase(it);
      }
    }
    if (taken) registry_.Free(taken->ref, taken->size);
  }
  return reply;
}

ErrorCode MasterCore::PromoteStart(const rpc::StoredObject& so, uint64_t segment_id, int64_t now_ns,
                                   uint64_t* offset) {
  {
    auto shard = table_.Lock(so.key());
    const Object* o = shard->Find(so.key());
    if (o == nullptr || o->pending()) return ErrorCode::OBJECT_NOT_FOUND;
    if (o->size != so.size() || so.checksum() == 0 || o->checksum != so.checksum()) {
      return ErrorCode::INVALID_PARAMS;
    }
    if (HasTier(o->replicas(), kTierDram) || o->replicas().size() >= kMaxReplicas) {
      return ErrorCode::OBJECT_ALREADY_EXISTS;
    }
  }
  Placement p;
  if (!registry_.AllocateOn(segment_id, so.size(), &p)) {
    // Room on this segment only: least recently used objects there, none younger than the
    // minimum age (a promotion is worth less than what an engine just wrote).
    evictor_.Evict(
        registry_.Reserved(so.size()), segment_id, now_ns, std::nullopt,
        std::chrono::duration_cast<std::chrono::nanoseconds>(options_.eviction_min_age).count(),
        /*young_too=*/false);
    if (!registry_.AllocateOn(segment_id, so.size(), &p)) return ErrorCode::NO_AVAILABLE_HANDLE;
  }
  std::lock_guard lock(promotions_mu_);
  promotions_[{segment_id, p.ref.offset}] = ReservedPromotion{so.key(), p.ref, so.size(), now_ns};
  *offset = p.ref.offset;
  return ErrorCode::OK;
}

ErrorCode MasterCore::PromoteCommit(const rpc::StoredObject& so, uint64_t segment_id) {
  // Taken out of the table first, so that expiry cannot free the range while it is listed.
  ReservedPromotion rp;
  {
    std::lock_guard lock(promotions_mu_);
    auto it = promotions_.find({segment_id, so.offset()});
    if (it == promotions_.end() || it->second.key != so.key()) return ErrorCode::OBJECT_NOT_FOUND;
    rp = std::move(it->second);
    promotions_.erase(it);
  }
  ErrorCode code = ErrorCode::OK;
  {
    auto shard = table_.Lock(rp.key);
    Object* o = shard->Find(rp.key);
    if (o == nullptr || o->pending() || o->size != rp.size || o->checksum != so.checksum()) {
      code = ErrorCode::OBJECT_NOT_FOUND;  // removed, upserted or evicted meanwhile
    } else if (HasTier(o->replicas(), kTierDram) || o->replicas().size() >= kMaxReplicas) {
      code = ErrorCode::OBJECT_ALREADY_EXISTS;
    } else if (o->held) {
      // Re-creating the object would drop its readers' holds: the host retries the commit.
      std::lock_guard lock(promotions_mu_);
      promotions_[{segment_id, so.offset()}] = std::move(rp);
      return ErrorCode::OBJECT_HAS_LEASE;
    } else {
      std::array<ReplicaRef, kMaxReplicas> refs;
      size_t n = 0;
      refs[n++] = rp.ref;  // DRAM first: readers go there
      for (const ReplicaRef& r : o->replicas()) refs[n++] = r;
      const uint64_t checksum = o->checksum;
      const uint8_t pins = o->flags & (kSoftPin | kHardPin);
      ObjectPtr merged = WithReplicas(*o, std::span<const ReplicaRef>(refs.data(), n));
      shard->Erase(o);
      shard->Insert(std::move(merged));
      // The host lists it with its DRAM objects (a master restart keeps it).
      registry_.RecordCommit(rp.ref, rp.key, rp.size, checksum, pins);
      RecordStored(events_, rp.key, KvMedium::kDram);  // back on DRAM (it stays on disk too)
      promoted_total_.fetch_add(1, std::memory_order_relaxed);
      return ErrorCode::OK;
    }
  }
  registry_.Free(rp.ref, rp.size);
  return code;
}

size_t MasterCore::ExpirePromotions(int64_t now_ns) {
  std::vector<ReservedPromotion> lapsed;
  {
    std::lock_guard lock(promotions_mu_);
    for (auto it = promotions_.begin(); it != promotions_.end();) {
      if (now_ns - it->second.reserved_ns >= kPromotionTimeoutNs) {
        lapsed.push_back(std::move(it->second));
        it = promotions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const ReservedPromotion& rp : lapsed) registry_.Free(rp.ref, rp.size);
  return lapsed.size();
}

}  // namespace kvpool::master
