// Batch put: one PUT_START for the batch, one WRITE per segment, one PUT_END that commits what
// was written and revokes what was not.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>
#include <thread>

#include "client/embedded/client_impl.h"
#include "client/embedded/transfer_plan.h"
#include "client/shared/replicate_config_proto.h"
#include "common/checksum.h"

namespace kvpool::client {
namespace {

Status FromCode(int32_t code, const std::string& message) {
  return Status(ErrorCodeFromInt(code), message);
}

}  // namespace

void ClientImpl::PutBatch(const ObjectBatch& batch, const ReplicateConfig& config, bool upsert,
                          Deadline limit, std::vector<Status>& results) {
  // Two kinds of keys are put again in passes of their own, until rpc_timeout (or `limit`):
  // - keys whose replica's host did not answer (a dead or hung segment host: RPC_FAIL,
  //   RPC_TIMEOUT) are placed again at once on other segments (the failed ones excluded; the
  //   master, told in PUT_END, skips them for every writer until their host pings again), at
  //   most kMaxReplacements times;
  // - keys refused while the pool's room is held by objects on their way to a disk tier, backing
  //   off from 1 to 10 ms: each pass writes what found room at once, so the disk keeps busy and
  //   puts into a pool full of such objects run at its speed instead of failing. Refused at the
  //   end: NO_AVAILABLE_HANDLE.
  constexpr int kMaxReplacements = 3;
  constexpr Clock::duration kMaxDelay = std::chrono::milliseconds(10);
  const Deadline until = RpcDeadline(limit);
  // A replacement follows a write that waited up to 3 x silent_peer_timeout on a silent host:
  // it may start while the call is within one control and one data deadline of its start, and
  // runs within that bound too.
  const Deadline replace_until =
      std::min(limit, DeadlineAfter(options_.rpc_timeout + options_.transfer_timeout));
  std::set<std::string> unreachable;
  PutRetries retries;
  PutPass(batch, config, upsert, limit, &unreachable, &retries, results);
  // Puts the objects `subset` (indices into the batch) again; returns their own retries, as
  // indices into the batch.
  auto again = [&](const std::vector<size_t>& subset) {
    PutRetries more;
    std::vector<Status> r(subset.size());
    PutPass(batch.Subset(subset), ConfigForKeys(config, subset), upsert, replace_until,
            &unreachable, &more, r);
    for (size_t k = 0; k < subset.size(); ++k) results[subset[k]] = std::move(r[k]);
    for (size_t& k : more.waiting) k = subset[k];
    for (size_t& k : more.replace) k = subset[k];
    return more;
  };
  for (int round = 0;
       round < kMaxReplacements && !retries.replace.empty() && Clock::now() < replace_until;
       ++round) {
    spdlog::debug("{} keys of the batch hit an unreachable segment host; placing them again",
                  retries.replace.size());
    PutRetries more = again(retries.replace);
    retries.replace = std::move(more.replace);
    retries.waiting.insert(retries.waiting.end(), more.waiting.begin(), more.waiting.end());
  }
  std::vector<size_t> waiting = std::move(retries.waiting);
  Clock::duration delay = std::chrono::milliseconds(1);
  while (!waiting.empty() && Clock::now() + delay < until) {
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, kMaxDelay);
    waiting = again(waiting).waiting;  // a key that now hits a dead host keeps that error
  }
}

void ClientImpl::PutPass(const ObjectBatch& batch, const ReplicateConfig& config, bool upsert,
                         Deadline limit, std::set<std::string>* unreachable, PutRetries* retries,
                         std::vector<Status>& results) {
  const std::vector<std::string>& keys = batch.keys();
  std::vector<master::MasterClient::PutItem> items;
  std::vector<size_t> sent;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!results[i].ok()) continue;
    items.push_back({keys[i], batch.bytes(i)});
    sent.push_back(i);
  }
  if (sent.empty()) return;
  if (Status st = CheckOpen(); !st.ok()) {  // closed by another thread meanwhile
    for (size_t i : sent) results[i] = st;
    return;
  }

  rpc::ReplicateConfig placement = ToProto(ConfigForKeys(config, sent));
  for (const std::string& segment : *unreachable) placement.add_excluded_segments(segment);
  auto started = master_->PutStart(items, placement, upsert, RpcDeadline(limit),
                                   options_.local_hostname, write_pace_.NsPerKib());
  if (started.ok() && started->results_size() != static_cast<int>(sent.size())) {
    started = Status(ErrorCode::INTERNAL_ERROR, "master answered PUT_START for another batch");
  }
  if (!started.ok()) {
    for (size_t i : sent) results[i] = started.status();
    return;
  }

  TransferPlan plan(&transfer_workers_);
  // A silent node fails its writes in seconds, not the whole transfer_timeout (failure-model.md).
  plan.set_stall_timeout(3 * options_.silent_peer_timeout);
  std::vector<size_t> written;  // objects with replicas to write
  std::vector<const rpc::PutStartResult*> placed_on(keys.size(), nullptr);
  for (size_t k = 0; k < sent.size(); ++k) {
    size_t i = sent[k];
    const rpc::PutStartResult& r = started->results(static_cast<int>(k));
    if (r.code() != 0 || r.already_exists()) {
      results[i] = FromCode(r.code(), r.message());
      if (r.offload_pending()) retries->waiting.push_back(i);
      continue;
    }
    written.push_back(i);
    placed_on[i] = &r;
    for (const auto& replica : r.replicas()) {
      if (replica.length() != batch.bytes(i)) {
        results[i] = Status(ErrorCode::INVALID_REPLICA,
                            fmt::format("key={}: master placed {} bytes for a {}-byte object",
                                        keys[i], replica.length(), batch.bytes(i)));
      } else if (Status st = plan.Add(i, replica, batch.buffers(i)); !st.ok()) {
        results[i] = st;
      }
    }
  }
  std::vector<uint64_t> checksums(keys.size(), 0);  // hashed by the threads that copy
  // Hosts that list what is written to them spare PUT_END the wait for their journal ack.
  HostRecords records{&keys, std::vector<char>(keys.size(), 0)};
  const Clock::time_point write_from = Clock::now();
  plan.Run(/*write=*/true,
           [this](const std::string& s) -> transfer::Transport& { return TransportFor(s); },
           TransferDeadline(limit), results, &checksums, &records);
  uint64_t written_bytes = 0;
  for (size_t i : written) written_bytes += results[i].ok() ? batch.bytes(i) : 0;
  write_pace_.Record(written_bytes, Clock::now() - write_from);

  // Segments whose host did not answer: reported to the master, avoided by the next passes.
  std::vector<std::string> silent;
  for (const auto& [segment, st] : plan.failed_segments()) {
    if (PeerHealth::MeansSilent(st.code()) && unreachable->insert(segment).second) {
      spdlog::warn("segment={} did not answer a put's write, placing its keys elsewhere: error={}",
                   segment, st.ToString());
      silent.push_back(segment);
    }
  }
  auto hit_unreachable = [&](size_t i) {
    if (!PeerHealth::MeansSilent(results[i].code())) return false;
    for (const rpc::Replica& r : placed_on[i]->replicas()) {
      if (unreachable->contains(r.segment_name())) return true;
    }
    return false;
  };
  std::vector<std::string> commit_keys, revoke_keys;
  std::vector<uint64_t> commit_checksums;  // recorded by the master, checked by readers
  std::vector<char> recorded_by_host;
  std::vector<size_t> committed;
  for (size_t i : written) {
    if (results[i].ok()) {
      commit_keys.push_back(keys[i]);
      commit_checksums.push_back(checksums[i] != 0 ? checksums[i] : ChecksumOf(batch.buffers(i)));
      recorded_by_host.push_back(records.recorded[i]);
      committed.push_back(i);
    } else {
      revoke_keys.push_back(keys[i]);
      if (hit_unreachable(i)) retries->replace.push_back(i);
      spdlog::debug("key={} put failed, revoking: error={}", keys[i], results[i].ToString());
    }
  }
  auto ended = master_->PutEnd(commit_keys, commit_checksums, revoke_keys, RpcDeadline(limit),
                               silent, recorded_by_host);
  if (!ended.ok()) {
    // The revokes may not have happened either: the master reclaims those reservations when the
    // put ages out; until then a new put of such a key would find it pending, so none is made.
    retries->replace.clear();
    // Not committed: invisible to readers; the master reclaims the reservations.
    for (size_t i : committed) results[i] = ended.status();
    return;
  }
  for (size_t k = 0; k < committed.size() && k < static_cast<size_t>(ended->codes_size()); ++k) {
    int32_t code = ended->codes(static_cast<int>(k));
    if (code != 0) {
      std::string msg = k < static_cast<size_t>(ended->messages_size())
                            ? ended->messages(static_cast<int>(k))
                            : std::string();
      results[committed[k]] = FromCode(code, msg);
    }
  }
}

}  // namespace kvpool::client
