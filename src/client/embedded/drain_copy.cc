// Graceful drain of the contributed segment: before its host stops, objects whose only replica
// is in this segment are copied to other segments (docs/failure-model.md).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "client/embedded/client_impl.h"

namespace kvpool::client {
namespace {

constexpr size_t kCopyBatch = 64;

}  // namespace

DrainCopyReport ClientImpl::CopySoleReplicasAway(Deadline until) {
  DrainCopyReport report;
  if (host_ == nullptr) return report;
  auto memory = host_->table().Find(host_->name());
  if (memory == nullptr) return report;
  // Catch up with the journal first: objects committed just before the drain must be listed.
  for (int round = 0; round < 64 && Clock::now() < until; ++round) {
    rpc::Ping ping;
    *ping.add_journal_acks() = host_->JournalAck();
    auto reply = master_->Ping(std::move(ping), RpcDeadline(until));
    if (!reply.ok() || reply->journals_size() == 0) break;
    host_->ApplyJournals(*reply);
  }
  std::vector<rpc::StoredObject> objects = host_->objects().Snapshot();
  for (size_t begin = 0; begin < objects.size(); begin += kCopyBatch) {
    if (Clock::now() >= until) {
      report.not_tried += objects.size() - begin;
      break;
    }
    size_t end = std::min(objects.size(), begin + kCopyBatch);
    std::vector<std::string> keys;
    for (size_t i = begin; i < end; ++i) keys.push_back(objects[i].key());
    auto where = master_->GetReplicaList(keys, /*no_lease=*/true, RpcDeadline(until));
    if (!where.ok()) {
      report.failed += keys.size();
      continue;
    }
    // The objects still here with no replica elsewhere, grouped by their pins (one put each).
    ObjectBatch sole[4];
    for (size_t i = 0; i < keys.size() && i < static_cast<size_t>(where->objects_size()); ++i) {
      const rpc::ObjectLocation& loc = where->objects(static_cast<int>(i));
      const rpc::StoredObject& o = objects[begin + i];
      bool here = false, elsewhere = false;
      for (const rpc::Replica& r : loc.replicas()) {
        bool mine = r.segment_name() == host_->name() &&
                    r.segment_incarnation() == memory->incarnation() && r.offset() == o.offset();
        here |= mine;
        elsewhere |= !mine;
      }
      if (loc.code() != 0 || !here || elsewhere || o.offset() + o.size() > memory->size()) {
        ++report.skipped;  // gone, moved, or safe elsewhere already
        continue;
      }
      uint32_t pins = o.pin_flags() & 3;
      sole[pins].Add(o.key(), memory->base() + o.offset(), o.size());
    }
    for (uint32_t pins = 0; pins < 4; ++pins) {
      if (sole[pins].empty()) continue;
      ReplicateConfig config;
      config.with_soft_pin = (pins & 1) != 0;
      config.with_hard_pin = (pins & 2) != 0;
      // An upsert: the master frees this replica (its segment is draining, so the new one lands
      // elsewhere) and the bytes go straight from this segment's memory to the new replica.
      std::vector<Status> results(sole[pins].size());
      PutBatch(sole[pins], config, /*upsert=*/true, until, results);
      for (size_t i = 0; i < results.size(); ++i) {
        if (results[i].ok()) {
          ++report.copied;
        } else {
          ++report.failed;
          spdlog::warn("drain: key={} not copied: {}", sole[pins].key(i), results[i].ToString());
        }
      }
    }
  }
  return report;
}

}  // namespace kvpool::client
