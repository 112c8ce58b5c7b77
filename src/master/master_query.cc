// MasterCore's lookups and removals: GET_REPLICA_LIST (with its read lease), EXISTS,
// EXISTS_PREFIX, REMOVE and REMOVE_ALL.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/keys.h"
#include "common/tenant_key.h"
#include "master/master_core.h"
#include "master/master_core_internal.h"

namespace kvpool::master {

rpc::GetReplicaListReply MasterCore::GetReplicaList(const rpc::KeysRequest& req, TimePoint now) {
  const int64_t now_ns = ToNanos(now);
  rpc::GetReplicaListReply reply;
  // A lease lasts until its reader releases it, at most the TTL, or until its client is
  // declared dead: the reader checks its transfer against both (client/embedded/get_path.cc).
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
      // distance keep it, client/embedded/replica_order.h).
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

rpc::CodesReply MasterCore::Remove(const rpc::KeysRequest& req, TimePoint now,
                                   std::vector<JournalMark>* frees) {
  const int64_t now_ns = ToNanos(now);
  rpc::CodesReply reply;
  for (const std::string& key : req.keys()) {
    std::string msg;
    ErrorCode code = RemoveOne(key, req.force(), now_ns, &msg, frees);
    AddCode(&reply, code, std::move(msg));
  }
  return reply;
}

ErrorCode MasterCore::RemoveOne(std::string_view key, bool force, int64_t now_ns, std::string* msg,
                                std::vector<JournalMark>* frees) {
  if (ErrorCode bad = KeyError(key, msg); bad != ErrorCode::OK) return bad;
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
  FreeReplicasAfterReaders(*obj, now_ns, frees);
  RecordRemovedObject(*obj, KvRemoval::kRemoved);
  shard->Erase(obj);
  return ErrorCode::OK;
}

rpc::RemoveAllReply MasterCore::RemoveAll(const rpc::RemoveAll& req, TimePoint now,
                                          std::string_view tenant,
                                          std::vector<JournalMark>* frees) {
  const int64_t now_ns = ToNanos(now);
  uint64_t removed = 0;
  for (size_t i = 0; i < ObjectTable::kShards; ++i) {
    auto shard = table_.LockIndex(i);
    removed += shard->EraseIf([&](Object& o) {
      if (TenantOf(o.key()) != tenant) return false;
      if (o.pending() || (o.leased(now_ns) && !req.force())) return false;
      FreeReplicasAfterReaders(o, now_ns, frees);
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

}  // namespace kvpool::master
