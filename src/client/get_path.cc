// Batch get: one GET_REPLICA_LIST for the batch (it grants a read lease), one READ per segment,
// then a check that the transfer finished inside the lease.
#include <fmt/format.h>

#include "client/client_impl.h"
#include "client/transfer_plan.h"
#include "common/keys.h"

namespace kvpool::client {
namespace {

// The replica to read: our own segment first (memcpy), else the first one listed.
const rpc::Replica& PickReplica(const rpc::ObjectLocation& loc, const std::string& own_segment) {
  for (const auto& r : loc.replicas()) {
    if (!own_segment.empty() && r.segment_name() == own_segment) return r;
  }
  return loc.replicas(0);
}

}  // namespace

std::vector<Result<uint64_t>> ClientImpl::GetBatch(const std::vector<std::string>& keys,
                                                   const std::vector<Status>& pre,
                                                   const DestFor& dest_for, Deadline limit) {
  std::vector<Status> status(keys.size());
  std::vector<Result<uint64_t>> results(keys.size(), Status(ErrorCode::INTERNAL_ERROR, ""));
  auto fail_all = [&](const Status& st) { return std::vector<Result<uint64_t>>(keys.size(), st); };
  if (Status st = CheckOpen(); !st.ok()) return fail_all(st);
  std::vector<std::string> wanted;
  std::vector<size_t> sent;
  for (size_t i = 0; i < keys.size(); ++i) {
    status[i] = pre[i].ok() ? ValidateKey(keys[i]) : pre[i];
    if (!status[i].ok()) continue;
    wanted.push_back(keys[i]);
    sent.push_back(i);
  }
  const Clock::time_point asked = Clock::now();  // the lease runs from no earlier than this
  Result<rpc::GetReplicaListReply> located = rpc::GetReplicaListReply();
  if (!sent.empty()) {
    located = master_->GetReplicaList(wanted, /*no_lease=*/false, RpcDeadline(limit));
    if (located.ok() && located->objects_size() != static_cast<int>(sent.size())) {
      located = Status(ErrorCode::INTERNAL_ERROR, "master answered GET for another batch");
    }
    if (!located.ok()) {
      for (size_t i : sent) status[i] = located.status();
      sent.clear();
    }
  }

  TransferPlan plan(&transfer_workers_);
  std::vector<uint64_t> sizes(keys.size(), 0);
  const std::string own = SegmentName();
  for (size_t k = 0; k < sent.size(); ++k) {
    size_t i = sent[k];
    const rpc::ObjectLocation& loc = located->objects(static_cast<int>(k));
    if (loc.code() != 0) {
      status[i] = Status(ErrorCodeFromInt(loc.code()), loc.message());
      continue;
    }
    if (loc.replicas_size() == 0) {
      status[i] = Status(ErrorCode::REPLICA_NOT_FOUND, fmt::format("key={}: no replica", keys[i]));
      continue;
    }
    Buffers dest = dest_for(i, loc.size());
    if (dest.empty()) {
      status[i] = Status(ErrorCode::INVALID_PARAMS, fmt::format("key={}: no buffer", keys[i]));
      continue;
    }
    uint64_t room = TotalLength(dest);
    if (loc.size() > room) {
      status[i] =
          Status(ErrorCode::BUFFER_OVERFLOW,
                 fmt::format("key={} is {} bytes; the buffer holds {}", keys[i], loc.size(), room));
      continue;
    }
    sizes[i] = loc.size();
    status[i] = plan.Add(i, PickReplica(loc, own), Prefix(dest, loc.size()));
  }
  plan.Run(/*write=*/false,
           [this](const std::string& s) -> transfer::Transport& { return TransportFor(s); },
           TransferDeadline(limit), status);

  const bool lease_expired =
      !sent.empty() && Clock::now() > asked + Millis(located->lease_ttl_ms());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (status[i].ok() && lease_expired) {
      status[i] = Status(ErrorCode::LEASE_EXPIRED,
                         fmt::format("key={}: transfer outlived the {} ms read lease", keys[i],
                                     located->lease_ttl_ms()));
    }
    results[i] = status[i].ok() ? Result<uint64_t>(sizes[i]) : Result<uint64_t>(status[i]);
  }
  return results;
}

}  // namespace kvpool::client
