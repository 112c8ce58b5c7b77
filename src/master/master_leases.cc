// MasterCore's read leases: releases from readers, and the leases that end without one (TTL,
// dead clients). GetReplicaList (master_core.cc) takes them.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "master/master_core.h"

namespace kvpool::master {

size_t MasterCore::EndLeases(std::vector<Lease> ended) {
  if (ended.empty()) return 0;
  // Every hold of every lease, by shard: each shard is locked once.
  std::vector<ShardHold> holds;
  for (Lease& l : ended) holds.insert(holds.end(), l.holds.begin(), l.holds.end());
  std::sort(holds.begin(), holds.end(),
            [](const ShardHold& a, const ShardHold& b) { return a.shard < b.shard; });
  for (size_t i = 0; i < holds.size();) {
    auto shard = table_.LockIndex(holds[i].shard);
    const uint32_t index = holds[i].shard;
    for (; i < holds.size() && holds[i].shard == index; ++i) shard->Unhold(holds[i].token);
  }
  // Only now: a stat that reads no lease held must find no object held either (a client that
  // waits for 0 leases and then removes is never refused).
  for (const Lease& l : ended) leases_.Ended(l);
  return ended.size();
}

void MasterCore::HoldGroupPeers(const std::vector<std::string_view>& grouped,
                                const rpc::KeysRequest& req, Lease* lease) {
  std::unordered_set<std::string> done(req.keys().begin(), req.keys().end());
  for (std::string_view key : grouped) {
    for (std::string& peer : table_.groups().PeersOf(key)) {
      if (!done.insert(peer).second) continue;
      const HashedKey hashed(peer);
      auto shard = table_.Lock(hashed);
      Object* obj = shard->Find(hashed);
      if (obj == nullptr || obj->pending()) continue;
      lease->holds.push_back(ShardHold{static_cast<uint32_t>(ObjectTable::ShardOfHash(hashed.hash)),
                                       shard->Hold(obj, lease->expiry_ns)});
      lease->bytes += obj->size;
    }
  }
}

size_t MasterCore::ReleaseLeases(std::string_view client_id, std::span<const uint64_t> ids,
                                 TimePoint now) {
  if (client_id.empty() || ids.empty()) return 0;
  const uint32_t client = clients_.Touch(client_id, now, false).handle;
  std::vector<Lease> ended;
  ended.reserve(ids.size());
  for (uint64_t id : ids) {
    if (auto l = leases_.Release(id, client)) ended.push_back(std::move(*l));
  }
  return EndLeases(std::move(ended));
}

Status MasterCore::LeaseRelease(const rpc::LeaseRelease& req, TimePoint now) {
  if (req.client_id().empty()) {
    return Status(ErrorCode::INVALID_PARAMS, "lease release: client_id is empty");
  }
  ReleaseLeases(req.client_id(),
                {req.lease_ids().data(), static_cast<size_t>(req.lease_ids_size())}, now);
  return Status::Ok();
}

}  // namespace kvpool::master
