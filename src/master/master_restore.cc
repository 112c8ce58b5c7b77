// MasterCore's part in surviving its own restart: segment journals handed to the segments'
// hosts in ping replies, the rebuild of the object table from the object lists the hosts send
// when they re-register, and draining segments. See docs/failure-model.md.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/keys.h"
#include "master/master_core.h"

namespace kvpool::master {

void MasterCore::AddJournals(const rpc::Ping& req, rpc::PingReply* reply) {
  for (const rpc::JournalAck& ack : req.journal_acks()) {
    rpc::SegmentJournal j;
    if (!registry_.CollectJournal(ack.segment_name(), req.client_id(), ack.applied_seq(),
                                  kJournalBatch, &j)) {
      continue;
    }
    if (j.entries_size() > 0 || j.reset()) *reply->add_journals() = std::move(j);
  }
}

bool MasterCore::JournalReady(const rpc::Ping& req) const {
  for (const rpc::JournalAck& ack : req.journal_acks()) {
    if (registry_.JournalHasAfter(ack.segment_name(), req.client_id(), ack.applied_seq())) {
      return true;
    }
  }
  return false;
}

Status MasterCore::CheckNotServedByAnother(const rpc::MountSegment& req, TimePoint now,
                                           std::string_view from_host) const {
  SegmentRegistry::Description d;
  if (!registry_.DescribeByName(req.segment_name(), &d) || d.client_id == req.client_id() ||
      d.endpoint != req.endpoint() || d.incarnation == req.incarnation() ||
      d.from_host == from_host) {
    return Status::Ok();  // not a replacement, or one from the same host: a restart
  }
  // Mounted from another host and not expired: its owner may only be cut off for a while (a
  // partition, a heartbeat in back-off), so it is refused until --client_ttl drops the segment.
  const std::string& owner = d.client_id;
  std::optional<TimePoint> seen = clients_.LastSeen(owner);
  const auto ago = seen ? std::chrono::duration_cast<Millis>(now - *seen).count() : -1;
  auto where = [](std::string_view h) {
    return h.empty() ? std::string("this host") : std::string(h);
  };
  spdlog::warn(
      "segment={} mount by client={} from {} refused: endpoint {} is served by "
      "client={} (mounted from {}), last heard from {} ms ago (two hosts announce the same "
      "address?)",
      req.segment_name(), req.client_id(), where(from_host), req.endpoint(), owner,
      where(d.from_host), ago);
  return Status(ErrorCode::SEGMENT_ALREADY_EXISTS,
                fmt::format("segment={}: endpoint {} is served by a process on another host "
                            "(client={}, mounted from {}, last heard from {} ms ago): two hosts "
                            "announce the same address? Each node's --host (an embedded "
                            "client's local_hostname) must be an address of its own host; leave "
                            "--host unset to announce the address toward the master. The "
                            "address is free once that client is silent for --client_ttl",
                            req.segment_name(), req.endpoint(), owner, where(d.from_host), ago));
}

void MasterCore::AckJournals(const rpc::Ping& req) {
  for (const rpc::JournalAck& ack : req.journal_acks()) {
    registry_.AckJournal(ack.segment_name(), req.client_id(), ack.applied_seq());
  }
}

bool MasterCore::CommitsAcked(std::span<const JournalMark> marks,
                              std::vector<uint32_t>* unacked) const {
  unacked->clear();
  for (size_t i = 0; i < marks.size();) {
    // The marks of one key are adjacent; one replica in its host's list is enough.
    const uint32_t index = marks[i].reply_index;
    bool held = false;
    for (; i < marks.size() && marks[i].reply_index == index; ++i) {
      held = held || registry_.CommitAcked(marks[i].segment_id, marks[i].seq);
    }
    if (!held) unacked->push_back(index);
  }
  return unacked->empty();
}

Status MasterCore::DrainSegment(const rpc::DrainSegment& req, TimePoint now) {
  if (req.client_id().empty()) {
    return Status(ErrorCode::INVALID_PARAMS, "drain: client_id is empty");
  }
  clients_.Touch(req.client_id(), now, /*make_known=*/false);
  return SetDraining(req.segment_name(), !req.undo(), req.client_id());
}

Status MasterCore::SetDraining(std::string_view segment_name, bool draining,
                               std::string_view client_id) {
  KVPOOL_RETURN_IF_ERROR(registry_.SetAccepting(segment_name, !draining, client_id));
  spdlog::info("segment={} {}", segment_name,
               draining ? "draining: no new replicas placed there" : "accepting replicas again");
  return Status::Ok();
}

size_t MasterCore::StageOrRestore(const rpc::MountSegment& req, uint64_t segment_id,
                                  int64_t now_ns) {
  std::vector<rpc::StoredObject> objects;
  {
    std::lock_guard lock(restore_mu_);
    StagedRestore& staged = staged_restores_[req.segment_name()];
    if (staged.segment_id != segment_id) staged = StagedRestore{segment_id, {}};
    staged.objects.insert(staged.objects.end(), req.objects().begin(), req.objects().end());
    if (req.more_objects()) return 0;
    objects = std::move(staged.objects);
    staged_restores_.erase(req.segment_name());
  }
  size_t listed = objects.size();
  size_t restored = RestoreObjects(segment_id, std::move(objects), now_ns);
  (void)registry_.SetAccepting(req.segment_name(), true);
  spdlog::info("segment={} client={} re-registered: objects_listed={} objects_restored={}",
               req.segment_name(), req.client_id(), listed, restored);
  return restored;
}

size_t MasterCore::RestoreObjects(uint64_t segment_id, std::vector<rpc::StoredObject> objects,
                                  int64_t now_ns) {
  // Ranges in ascending order; an object overlapping the one before it is dropped (a host's
  // list never holds overlaps, so this only guards against a confused host).
  std::erase_if(objects, [](const rpc::StoredObject& o) {
    return o.size() == 0 || !ValidateKey(o.key()).ok();
  });
  std::sort(objects.begin(), objects.end(),
            [](const rpc::StoredObject& a, const rpc::StoredObject& b) {
              return a.offset() < b.offset();
            });
  std::vector<RestoredRange> ranges;
  ranges.reserve(objects.size());
  uint64_t end = 0;
  std::vector<rpc::StoredObject> kept;
  kept.reserve(objects.size());
  for (rpc::StoredObject& o : objects) {
    if (!kept.empty() && o.offset() < end) continue;
    end = o.offset() + registry_.Reserved(o.size());
    ranges.push_back(RestoredRange{o.offset(), o.size()});
    kept.push_back(std::move(o));
  }
  auto handles = registry_.Restore(segment_id, ranges);
  const uint32_t tier = registry_.TierOf(segment_id);
  size_t restored = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (!handles[i]) continue;
    ReplicaRef ref{segment_id, kept[i].offset(), *handles[i], tier};
    bool adopted;
    {
      auto shard = table_.Lock(kept[i].key());
      adopted = AdoptRestored(*shard, kept[i], ref, now_ns);
    }
    if (adopted) {
      ++restored;
      RecordStored(events_, kept[i].key(), tier == kTierDisk ? KvMedium::kDisk : KvMedium::kDram);
    } else {
      registry_.Free(ref, kept[i].size());  // journaled: the host drops it from its list
    }
  }
  return restored;
}

bool MasterCore::AdoptRestored(ObjectTable::Shard& shard, const rpc::StoredObject& so,
                               const ReplicaRef& ref, int64_t now_ns) {
  Object* existing = shard.Find(so.key());
  if (existing == nullptr) {
    ObjectPtr obj = Object::Create(so.key(), so.size(), std::span<const ReplicaRef>(&ref, 1));
    obj->state = ObjectState::kComplete;
    obj->stamp_ns = 0;  // no lease
    obj->set_last_access_ns(now_ns);
    obj->flags = static_cast<uint8_t>(so.pin_flags() & (kSoftPin | kHardPin));
    obj->checksum = so.checksum();
    shard.Insert(std::move(obj));
    return true;
  }
  // The key is known already (another host restored it first, or a put after the restart).
  // The replica joins it only when it certainly holds the same bytes: same size and a known,
  // equal checksum. Otherwise it is freed: better one replica fewer than a stale one.
  // A held object stays as it is: replacing it would drop its readers' holds.
  if (existing->pending() || existing->held || existing->size != so.size() || so.checksum() == 0 ||
      existing->checksum != so.checksum() || existing->replicas().size() >= kMaxReplicas) {
    return false;
  }
  for (const ReplicaRef& r : existing->replicas()) {
    if (r.segment_id == ref.segment_id) return false;
  }
  std::vector<ReplicaRef> refs(existing->replicas().begin(), existing->replicas().end());
  refs.push_back(ref);
  ObjectPtr merged = Object::Create(existing->key(), existing->size, refs);
  merged->checksum = existing->checksum;
  merged->stamp_ns = existing->stamp_ns;
  merged->set_last_access_ns(existing->last_access_ns());
  merged->writer = existing->writer;
  merged->state = existing->state;
  merged->flags = existing->flags;
  shard.Erase(existing);
  shard.Insert(std::move(merged));
  return true;
}

}  // namespace kvpool::master
