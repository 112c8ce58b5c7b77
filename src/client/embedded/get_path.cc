// Batch get: one GET_REPLICA_LIST for the batch (it grants a read lease), one READ per segment,
// a checksum check when asked, a retry of each failed key from its next replica, then a check
// that the transfer finished inside the lease's bound, and the lease's release (queued: it
// travels with a later request, docs/architecture.md "Read leases").
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "client/embedded/client_impl.h"
#include "client/embedded/replica_order.h"
#include "client/embedded/transfer_plan.h"
#include "common/checksum.h"

namespace kvpool::client {
namespace {

// One key being read: where its bytes go and the replicas still to try, best first.
struct KeyRead {
  size_t index = 0;
  Buffers dest;  // exactly the object's size
  uint64_t checksum = 0;
  std::vector<const rpc::Replica*> order;
  size_t next = 0;  // order[next] is the replica of the current attempt
};

// The deadline of one attempt: all the time left when no key has another replica to try, else
// half of it, so a hung node cannot eat the time its fallback needs.
Deadline AttemptDeadline(Deadline final_deadline, bool fallback_left) {
  if (!fallback_left) return final_deadline;
  const Deadline now = Clock::now();
  if (final_deadline <= now) return final_deadline;
  return now + (final_deadline - now) / 2;
}

// CHECKSUM_MISMATCH unless the bytes now in `read.dest` hash to the recorded checksum.
Status Verify(const std::string& key, const KeyRead& read) {
  if (read.checksum == 0) return Status::Ok();  // none recorded (written by an older client)
  const uint64_t got = ChecksumOf(read.dest);
  if (got == read.checksum) return Status::Ok();
  const rpc::Replica& r = *read.order[read.next];
  return Status(ErrorCode::CHECKSUM_MISMATCH,
                fmt::format("key={}: bytes read from segment {} offset {} hash to {:016x}, the "
                            "object's checksum is {:016x}",
                            key, r.segment_name(), r.offset(), got, read.checksum));
}

// Tells `health` how each host of this round's replicas answered: silent (PeerHealth::
// MeansSilent) if any of its keys says so, else alive if any of its keys was read.
void NoteOutcomes(const std::vector<KeyRead*>& round, const std::vector<Status>& status,
                  PeerHealth& health) {
  // The usual round: every key read and no host silent before, so there is nothing to note.
  if (!health.AnySilent() && std::none_of(round.begin(), round.end(), [&](const KeyRead* r) {
        const Status& st = status[r->index];
        return !st.ok() && PeerHealth::MeansSilent(st.code());
      })) {
    return;
  }
  std::map<std::string_view, Status> outcome;  // by endpoint
  for (const KeyRead* r : round) {
    const Status& st = status[r->index];
    if (!st.ok() && !PeerHealth::MeansSilent(st.code())) continue;  // the host answered that
    auto [it, added] = outcome.try_emplace(r->order[r->next]->endpoint(), st);
    if (!added && it->second.ok() && !st.ok()) it->second = st;
  }
  const Clock::time_point now = Clock::now();
  for (const auto& [endpoint, st] : outcome) health.Note(std::string(endpoint), st, now);
}

// Reads every key from its current replica, one data request per segment; a key whose read
// fails (transfer error, or checksum mismatch) moves to its next replica and is read again in
// the next round, while the deadline allows. A key's final status is its last attempt's.
// A round in which some key has another replica left gives up on a silent host after
// `silent_peer` without progress, and `health` learns which hosts were silent (they go last in
// later batches' replica orders) and which answered.
template <typename TransportFor>
void ReadWithFallback(const std::vector<std::string>& keys, std::vector<KeyRead>& reads,
                      Deadline deadline, TaskPool* workers, TransportFor&& transport_for,
                      Clock::duration silent_peer, PeerHealth& health,
                      std::vector<Status>& status) {
  std::vector<KeyRead*> round;
  round.reserve(reads.size());
  for (KeyRead& r : reads) round.push_back(&r);
  while (!round.empty()) {
    TransferPlan plan(workers);
    bool fallback_left = false;
    for (KeyRead* r : round) {
      status[r->index] = plan.Add(r->index, *r->order[r->next], r->dest);
      fallback_left = fallback_left || r->next + 1 < r->order.size();
    }
    if (fallback_left) plan.set_stall_timeout(silent_peer);
    plan.Run(/*write=*/false, transport_for, AttemptDeadline(deadline, fallback_left), status);
    NoteOutcomes(round, status, health);
    std::vector<KeyRead*> again;
    for (KeyRead* r : round) {
      Status& st = status[r->index];
      if (st.ok()) st = Verify(keys[r->index], *r);
      if (st.ok()) continue;
      if (r->next + 1 < r->order.size() && Clock::now() < deadline) {
        spdlog::debug("key={} read from segment {} failed, trying the next replica: error={}",
                      keys[r->index], r->order[r->next]->segment_name(), st.ToString());
        ++r->next;
        again.push_back(r);
      }
    }
    round = std::move(again);
  }
}

}  // namespace

std::string ClientImpl::LeaseLost(const rpc::GetReplicaListReply& located, Clock::time_point asked,
                                  Deadline limit) {
  const Clock::duration took = Clock::now() - asked;
  if (took > Millis(located.lease_ttl_ms())) {
    return fmt::format("transfer outlived the {} ms read lease", located.lease_ttl_ms());
  }
  if (located.lease_id() == 0 || located.client_ttl_ms() == 0 ||
      took < Millis(located.client_ttl_ms())) {
    return {};  // the master heard from us at the grant: it cannot have declared us dead yet
  }
  // Long enough for the master to have declared this client dead (ending its leases) had it
  // stalled: one ping tells, as our registration's handle changes only then. Only transfers
  // longer than --client_ttl pay this round trip.
  auto ping = master_->Ping(RpcDeadline(limit));
  if (ping.ok() && ping->client_handle() == located.client_handle()) return {};
  return ping.ok() ? "the master declared this client dead during the transfer (silent for "
                     "--client_ttl), which ended its read lease"
                   : "transfer outlived --client_ttl and the master could not confirm the read "
                     "lease: " +
                         ping.status().ToString();
}

void ClientImpl::GetBatch(const std::vector<std::string>& keys, const DestFor& dest_for,
                          Deadline limit, bool verify, std::vector<Result<uint64_t>>& results) {
  verify = verify || options_.verify_checksum;
  std::vector<Status> status(keys.size());
  std::vector<size_t> sent;
  sent.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (results[i].ok()) {
      sent.push_back(i);
    } else {
      status[i] = results[i].status();
    }
  }
  std::vector<std::string> some;  // the keys sent, when not all of them are
  if (sent.size() != keys.size()) {
    for (size_t i : sent) some.push_back(keys[i]);
  }
  const std::vector<std::string>& wanted = sent.size() == keys.size() ? keys : some;
  const Clock::time_point asked = Clock::now();  // the lease runs from no earlier than this
  Result<rpc::GetReplicaListReply> located = rpc::GetReplicaListReply();
  if (!sent.empty()) {
    located = master_->GetReplicaList(wanted, /*no_lease=*/false, RpcDeadline(limit),
                                      read_pace_.NsPerKib());
    if (located.ok() && located->objects_size() != static_cast<int>(sent.size())) {
      located = Status(ErrorCode::INTERNAL_ERROR, "master answered GET for another batch");
    }
    if (!located.ok()) {
      for (size_t i : sent) status[i] = located.status();
      sent.clear();
    }
  }

  std::vector<KeyRead> reads;
  std::vector<uint64_t> sizes(keys.size(), 0);
  const ReplicaOrder order(SegmentName(), options_.local_hostname, &peer_health_);
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
    reads.push_back(
        KeyRead{i, Prefix(dest, loc.size()), verify ? loc.checksum() : 0, order.Sorted(loc), 0});
  }
  const Clock::time_point read_from = Clock::now();
  ReadWithFallback(
      keys, reads, TransferDeadline(limit), &transfer_workers_,
      [this](const std::string& s) -> transfer::Transport& { return TransportFor(s); },
      options_.silent_peer_timeout, peer_health_, status);
  uint64_t read_bytes = 0;
  for (const KeyRead& r : reads) read_bytes += status[r.index].ok() ? sizes[r.index] : 0;
  read_pace_.Record(read_bytes, Clock::now() - read_from);

  const std::string lease_lost = sent.empty() ? std::string() : LeaseLost(*located, asked, limit);
  // The transfer is over (every attempt returned): the lease may end. Queued, not sent: the
  // next request carries it, or the lease flusher sends it (no round trip here).
  if (!sent.empty()) {
    master_->ReleaseLease(located->lease_id());
    for (uint64_t more : located->more_lease_ids()) master_->ReleaseLease(more);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (status[i].ok() && !lease_lost.empty()) {
      status[i] = Status(ErrorCode::LEASE_EXPIRED, fmt::format("key={}: {}", keys[i], lease_lost));
    }
    results[i] = status[i].ok() ? Result<uint64_t>(sizes[i]) : Result<uint64_t>(status[i]);
  }
}

}  // namespace kvpool::client
