#include "master_client/master_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "common/key_chunks.h"
#include "common/keys.h"

namespace kvpool::master {
namespace {

// Appends one chunk's per-key entries (`list_of(reply)`, `count` of them) to `into`; when the
// chunk's call failed, or answered for another number of keys, one entry per key carrying that
// error instead. For replies whose entries have `code` and `message` (PutStartResult,
// ObjectLocation).
template <typename Entry, typename Reply, typename ListOf>
void AppendChunk(google::protobuf::RepeatedPtrField<Entry>& into, Result<Reply>& part,
                 ListOf list_of, size_t count, const char* method) {
  if (part.ok() && static_cast<size_t>(list_of(*part).size()) != count) {
    part = Status(ErrorCode::INTERNAL_ERROR,
                  std::string("master answered ") + method + " for another batch");
  }
  for (size_t i = 0; i < count; ++i) {
    Entry* e = into.Add();
    if (part.ok()) {
      *e = std::move(list_of(*part)[static_cast<int>(i)]);
    } else {
      e->set_code(static_cast<int32_t>(part.status().code()));
      e->set_message(part.status().message());
    }
  }
}

// Appends one request's CodesReply for `keys` keys to `into` (messages stay "empty, or one per
// key": padded with "" once any part has messages).
void AppendCodes(rpc::CodesReply& into, const Result<rpc::CodesReply>& part, size_t keys) {
  const size_t before = static_cast<size_t>(into.codes_size());
  const bool messages = into.messages_size() > 0 || !part.ok() || part->messages_size() > 0;
  if (messages) {
    while (static_cast<size_t>(into.messages_size()) < before) into.add_messages();
  }
  for (size_t k = 0; k < keys; ++k) {
    const int kk = static_cast<int>(k);
    if (!part.ok()) {
      into.add_codes(static_cast<int32_t>(part.status().code()));
      into.add_messages(part.status().message());
      continue;
    }
    into.add_codes(kk < part->codes_size() ? part->codes(kk)
                                           : static_cast<int32_t>(ErrorCode::INTERNAL_ERROR));
    if (messages) into.add_messages(kk < part->messages_size() ? part->messages(kk) : "");
  }
}

// A batch's keys split into requests that fit in a frame (common/key_chunks.h).
template <typename Key>
std::vector<std::pair<size_t, size_t>> ChunksOf(std::span<const Key> keys) {
  return KeyChunks(keys.size(), [&](size_t i) { return keys[i].size(); });
}

// The codes for `keys`, asked with one `once(part)` request, or one per chunk when the batch is
// too big for one frame (a failed chunk fails its own keys).
template <typename Key, typename Once>
Result<rpc::CodesReply> CodesByChunk(std::span<const Key> keys, Once once) {
  auto chunks = ChunksOf(keys);
  if (chunks.size() == 1) return once(keys);
  rpc::CodesReply all;
  for (auto [begin, end] : chunks) {
    AppendCodes(all, once(keys.subspan(begin, end - begin)), end - begin);
  }
  return all;
}

}  // namespace

MasterClient::MasterClient(rpc::Endpoint master, std::string client_id,
                           std::shared_ptr<rpc::ConnectionPool> pool)
    : master_(std::move(master)),
      client_id_(std::move(client_id)),
      pool_(pool ? std::move(pool) : std::make_shared<rpc::ConnectionPool>(client_id_)) {}

MasterClient::MasterClient(std::shared_ptr<ha::LeaderLocator> locator, std::string client_id,
                           std::shared_ptr<rpc::ConnectionPool> pool)
    : locator_(std::move(locator)),
      client_id_(std::move(client_id)),
      pool_(pool ? std::move(pool) : std::make_shared<rpc::ConnectionPool>(client_id_)) {}

std::unique_ptr<MasterClient> MasterClient::For(const ha::MasterAddress& address,
                                                std::string client_id,
                                                std::shared_ptr<rpc::ConnectionPool> pool) {
  if (!address.via_etcd) {
    return std::make_unique<MasterClient>(address.endpoint, std::move(client_id), std::move(pool));
  }
  return std::make_unique<MasterClient>(std::make_shared<ha::LeaderLocator>(address.etcd),
                                        std::move(client_id), std::move(pool));
}

rpc::Endpoint MasterClient::master() const {
  if (locator_ == nullptr) return master_;
  std::lock_guard lock(last_mu_);
  return last_;
}

std::string MasterClient::address_string() const {
  return locator_ == nullptr ? master_.ToString() : locator_->Describe();
}

bool MasterClient::Believe(uint64_t epoch) {
  if (locator_ != nullptr) return locator_->Observe(epoch);
  if (epoch == 0) return true;
  uint64_t seen = newest_epoch_.load(std::memory_order_acquire);
  while (epoch > seen && !newest_epoch_.compare_exchange_weak(seen, epoch)) {
  }
  return epoch >= seen;
}

Status MasterClient::CallAt(const rpc::Endpoint& ep, rpc::Method method,
                            const google::protobuf::MessageLite& request,
                            google::protobuf::MessageLite* response, Deadline deadline,
                            bool* sent) {
  *sent = false;
  auto conn = pool_->Acquire(ep, deadline);
  if (!conn.ok()) return conn.status();
  *sent = true;
  return (*conn)->Call(method, request, response, deadline);
}

namespace {

// Requests that change nothing at the master: safe to send again after a broken connection.
bool ChangesNothing(rpc::Method method) {
  switch (method) {
    case rpc::PING:
    case rpc::GET_REPLICA_LIST:
    case rpc::EXISTS:
    case rpc::EXISTS_PREFIX:
    case rpc::STAT:
    case rpc::LEASE_RELEASE:
      return true;
    default:
      return false;
  }
}

}  // namespace

template <typename Reply>
Status MasterClient::Call(rpc::Method method, const google::protobuf::MessageLite& request,
                          Reply* response, Deadline deadline) {
  auto epoch_of = [](const Reply& r) -> uint64_t {
    if constexpr (requires { r.leader_epoch(); }) {
      return r.leader_epoch();
    } else {
      return 0;
    }
  };
  auto stale = [&](const rpc::Endpoint& ep) {
    return Status(
        ErrorCode::NOT_LEADER,
        fmt::format("master {} answered for leadership epoch {}, older than epoch {} "
                    "already seen: answer not believed",
                    ep.ToString(), epoch_of(*response),
                    locator_ != nullptr ? locator_->newest_epoch() : newest_epoch_.load()));
  };
  if (locator_ == nullptr) {
    bool sent = false;
    Status st = CallAt(master_, method, request, response, deadline, &sent);
    if (st.ok() && !Believe(epoch_of(*response))) return stale(master_);
    return st;
  }
  // Through etcd: find the leader, and on a lost or refusing one find it again, until the
  // deadline. Back-off from 20 ms to 200 ms between tries.
  Clock::duration backoff = std::chrono::milliseconds(20);
  for (;;) {
    auto ep = locator_->Current(deadline);
    Status st = ep.status();
    bool sent = false;
    if (ep.ok()) {
      {
        std::lock_guard lock(last_mu_);
        last_ = *ep;
      }
      st = CallAt(*ep, method, request, response, deadline, &sent);
      if (st.ok() && Believe(epoch_of(*response))) return st;
      if (st.ok()) {
        st = stale(*ep);
        sent = false;  // a stale master's state is not the pool's: sending again is safe
      }
      if (st.code() != ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS) locator_->Forget(*ep);
    }
    const ErrorCode c = st.code();
    const bool again = c == ErrorCode::NOT_LEADER ||
                       c == ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS ||
                       c == ErrorCode::ETCD_OPERATION_ERROR ||
                       (c == ErrorCode::RPC_FAIL && (!sent || ChangesNothing(method)));
    if (!again || Clock::now() + backoff >= deadline) return st;
    std::this_thread::sleep_for(backoff);
    backoff = std::min<Clock::duration>(backoff * 2, std::chrono::milliseconds(200));
  }
}

template <typename Reply>
Result<Reply> MasterClient::CallFor(rpc::Method method,
                                    const google::protobuf::MessageLite& request,
                                    Deadline deadline) {
  Reply reply;
  Status st = Call(method, request, &reply, deadline);
  if (!st.ok()) return st;
  return reply;
}

void MasterClient::ReleaseLease(uint64_t lease_id) {
  if (lease_id == 0) return;
  bool was_empty;
  {
    std::lock_guard lock(release_mu_);
    was_empty = releases_.empty();
    if (was_empty) oldest_release_ = Clock::now();
    if (releases_.size() >= kMaxQueuedReleases) releases_.erase(releases_.begin());
    releases_.push_back(lease_id);
    // Only the first release of a batch wakes the flusher, and only when it is not polling.
    was_empty = was_empty && !release_polling_;
  }
  if (was_empty) release_cv_.notify_all();
}

bool MasterClient::TakeReleases(google::protobuf::RepeatedField<uint64_t>* out, ReleaseOrder order,
                                Deadline deadline) {
  std::unique_lock lock(release_mu_);
  if (order == ReleaseOrder::kAfterReleasesInFlight && requests_releasing_ > 0) {
    releasing_done_cv_.wait_until(lock, std::min(deadline, Clock::now() + kReleaseOrderWait),
                                  [&] { return requests_releasing_ == 0; });
  }
  if (releases_.empty()) return false;
  out->Add(releases_.begin(), releases_.end());
  releases_.clear();
  ++requests_releasing_;
  return true;
}

void MasterClient::ReleasesAnswered() {
  bool none_left;
  {
    std::lock_guard lock(release_mu_);
    none_left = --requests_releasing_ == 0;
  }
  if (none_left) releasing_done_cv_.notify_all();
}

void MasterClient::ReturnReleases(const google::protobuf::RepeatedField<uint64_t>& ids) {
  if (ids.empty()) return;
  bool was_empty;
  {
    std::lock_guard lock(release_mu_);
    was_empty = releases_.empty();
    if (was_empty) oldest_release_ = Clock::now();
    releases_.insert(releases_.end(), ids.begin(), ids.end());
    if (releases_.size() > kMaxQueuedReleases) {
      releases_.erase(releases_.begin(), releases_.end() - kMaxQueuedReleases);
    }
  }
  if (was_empty) release_cv_.notify_all();
}

size_t MasterClient::queued_releases() const {
  std::lock_guard lock(release_mu_);
  return releases_.size();
}

bool MasterClient::WaitForStaleReleases(Clock::duration delay, Deadline until) {
  std::unique_lock lock(release_mu_);
  while (!release_waits_stopped_) {
    if (releases_.empty()) {
      const Clock::time_point now = Clock::now();
      if (now - oldest_release_ < kReleasePollWindow) {
        // Releases keep coming: look again after `delay` instead of asking each one to wake us
        // (a notify per get would cost the get path a system call).
        release_polling_ = true;
        release_cv_.wait_until(lock, std::min(now + delay, until));
        if (Clock::now() >= until) return false;
        continue;
      }
      release_polling_ = false;
      if (release_cv_.wait_until(lock, until) == std::cv_status::timeout) return false;
      continue;
    }
    // Something is queued: flush it unless a request takes it first (then wait again).
    const Clock::time_point due = oldest_release_ + delay;
    if (Clock::now() >= due) return true;
    if (release_cv_.wait_until(lock, std::min(due, until)) == std::cv_status::timeout &&
        Clock::now() >= until) {
      return false;
    }
  }
  return false;
}

void MasterClient::StopReleaseWaits() {
  {
    std::lock_guard lock(release_mu_);
    release_waits_stopped_ = true;
  }
  release_cv_.notify_all();
}

Status MasterClient::FlushLeaseReleases(Deadline deadline) {
  rpc::LeaseRelease req;
  req.set_client_id(client_id_);
  if (!TakeReleases(req.mutable_lease_ids(), ReleaseOrder::kAny, deadline)) return Status::Ok();
  rpc::Empty reply;
  Status st = Call(rpc::LEASE_RELEASE, req, &reply, deadline);
  if (!st.ok()) ReturnReleases(req.lease_ids());
  ReleasesAnswered();
  return st;
}

template <typename Reply, typename Req>
Result<Reply> MasterClient::CallReleasing(rpc::Method method, Req& request, Deadline deadline,
                                          ReleaseOrder order) {
  const bool took = TakeReleases(request.mutable_released_leases(), order, deadline);
  auto r = CallFor<Reply>(method, request, deadline);
  if (!took) return r;
  if (!r.ok()) ReturnReleases(request.released_leases());
  ReleasesAnswered();
  return r;
}

template <typename Key>
rpc::KeysRequest MasterClient::KeysOf(std::span<const Key> keys) const {
  rpc::KeysRequest req;
  req.set_client_id(client_id_);
  req.mutable_keys()->Reserve(static_cast<int>(keys.size()));
  for (const Key& k : keys) req.add_keys(k.data(), k.size());
  return req;
}

Result<rpc::PingReply> MasterClient::Ping(Deadline deadline) {
  rpc::Ping req;
  req.set_client_id(client_id_);
  return CallReleasing<rpc::PingReply>(rpc::PING, req, deadline);
}

Result<rpc::PingReply> MasterClient::Ping(rpc::Ping req, Deadline deadline) {
  req.set_client_id(client_id_);
  // A long-polling ping is answered (and its releases applied) only after its wait.
  if (req.journal_wait_ms() > 0) return CallFor<rpc::PingReply>(rpc::PING, req, deadline);
  return CallReleasing<rpc::PingReply>(rpc::PING, req, deadline);
}

Result<rpc::MountSegmentReply> MasterClient::MountSegment(std::string_view segment_name,
                                                          std::string_view endpoint, uint64_t size,
                                                          Deadline deadline) {
  rpc::MountSegment req;
  req.set_segment_name(std::string(segment_name));
  req.set_endpoint(std::string(endpoint));
  req.set_size(size);
  return MountSegmentAs(std::move(req), deadline);
}

Result<rpc::MountSegmentReply> MasterClient::MountSegmentAs(rpc::MountSegment req,
                                                            Deadline deadline) {
  req.set_client_id(client_id_);
  return CallFor<rpc::MountSegmentReply>(rpc::MOUNT_SEGMENT, req, deadline);
}

Result<rpc::CodesReply> MasterClient::TierUpdate(std::string_view segment_name,
                                                 std::span<const rpc::StoredObject> added,
                                                 std::span<const rpc::StoredObject> dropped,
                                                 Deadline deadline) {
  rpc::TierUpdate req;
  req.set_client_id(client_id_);
  req.set_segment_name(std::string(segment_name));
  for (const rpc::StoredObject& o : added) *req.add_added() = o;
  for (const rpc::StoredObject& o : dropped) *req.add_dropped() = o;
  auto r = CallFor<rpc::CodesReply>(rpc::TIER_UPDATE, req, deadline);
  if (r.ok() && r->codes_size() != req.added_size() + req.dropped_size()) {
    return Status(ErrorCode::INTERNAL_ERROR,
                  fmt::format("tier update of segment={}: {} codes for {} items", segment_name,
                              r->codes_size(), req.added_size() + req.dropped_size()));
  }
  return r;
}

Result<rpc::PromoteReply> MasterClient::Promote(rpc::Promote req, Deadline deadline) {
  req.set_client_id(client_id_);
  auto r = CallFor<rpc::PromoteReply>(rpc::PROMOTE, req, deadline);
  if (r.ok() &&
      (r->start_codes_size() != req.start_size() || r->start_offsets_size() != req.start_size() ||
       r->commit_codes_size() != req.commit_size())) {
    return Status(ErrorCode::INTERNAL_ERROR,
                  fmt::format("promote into segment={}: answers for {}+{} items of {}+{}",
                              req.segment_name(), r->start_codes_size(), r->commit_codes_size(),
                              req.start_size(), req.commit_size()));
  }
  return r;
}

Status MasterClient::UnmountSegment(std::string_view segment_name, Deadline deadline) {
  rpc::UnmountSegment req;
  req.set_client_id(client_id_);
  req.set_segment_name(std::string(segment_name));
  rpc::Empty reply;
  return Call(rpc::UNMOUNT_SEGMENT, req, &reply, deadline);
}

Status MasterClient::DrainSegment(std::string_view segment_name, bool undo, Deadline deadline) {
  rpc::DrainSegment req;
  req.set_client_id(client_id_);
  req.set_segment_name(std::string(segment_name));
  req.set_undo(undo);
  rpc::Empty reply;
  return Call(rpc::DRAIN_SEGMENT, req, &reply, deadline);
}

Result<rpc::PutStartReply> MasterClient::PutStart(std::span<const PutItem> items,
                                                  const rpc::ReplicateConfig& config, bool upsert,
                                                  Deadline deadline, std::string_view client_host,
                                                  uint32_t write_pace_ns_per_kib) {
  auto chunks = KeyChunks(items.size(), [&](size_t i) { return items[i].key.size(); });
  if (chunks.size() == 1) {
    return PutStartOnce(items, config, upsert, deadline, client_host, write_pace_ns_per_kib);
  }
  // A batch too big for one frame: one request per chunk. A chunk that fails fails its own
  // keys only; the others' reservations go on to be written and committed.
  rpc::PutStartReply all;
  for (auto [begin, end] : chunks) {
    auto part = PutStartOnce(items.subspan(begin, end - begin), config, upsert, deadline,
                             client_host, write_pace_ns_per_kib);
    AppendChunk(
        *all.mutable_results(), part,
        [](rpc::PutStartReply & r) -> auto& { return *r.mutable_results(); }, end - begin,
        "PUT_START");
  }
  return all;
}

Result<rpc::PutStartReply> MasterClient::PutStartOnce(std::span<const PutItem> items,
                                                      const rpc::ReplicateConfig& config,
                                                      bool upsert, Deadline deadline,
                                                      std::string_view client_host,
                                                      uint32_t write_pace_ns_per_kib) {
  rpc::PutStart req;
  req.set_client_id(client_id_);
  req.set_client_host(std::string(client_host));
  req.mutable_items()->Reserve(static_cast<int>(items.size()));
  for (const PutItem& item : items) {
    rpc::PutItem* p = req.add_items();
    p->set_key(std::string(item.key));
    p->set_size(item.size);
  }
  *req.mutable_config() = config;
  req.set_upsert(upsert);
  req.set_write_pace_ns_per_kib(write_pace_ns_per_kib);
  return CallReleasing<rpc::PutStartReply>(
      rpc::PUT_START, req, deadline,
      upsert ? ReleaseOrder::kAfterReleasesInFlight : ReleaseOrder::kAny);
}

Result<rpc::CodesReply> MasterClient::PutEnd(std::span<const std::string> commit_keys,
                                             std::span<const uint64_t> commit_checksums,
                                             std::span<const std::string> revoke_keys,
                                             Deadline deadline,
                                             std::span<const std::string> unreachable_segments,
                                             std::span<const char> recorded_by_host) {
  auto commits = ChunksOf(commit_keys);
  auto revokes = ChunksOf(revoke_keys);
  bool reported = false;  // the unreachable segments travel with the first request
  auto once = [&](size_t first, size_t last, std::span<const std::string> revoke) {
    rpc::PutEnd req;
    req.set_client_id(client_id_);
    if (!std::exchange(reported, true)) {
      for (const std::string& s : unreachable_segments) req.add_unreachable_segments(s);
    }
    for (size_t i = first; i < last; ++i) req.add_commit_keys(commit_keys[i]);
    for (size_t i = first; i < last && !commit_checksums.empty(); ++i) {
      req.add_commit_checksums(commit_checksums[i]);
    }
    for (size_t i = first; i < last && !recorded_by_host.empty(); ++i) {
      req.add_recorded_by_host(recorded_by_host[i] != 0);
    }
    for (const std::string& k : revoke) req.add_revoke_keys(k);
    return CallFor<rpc::CodesReply>(rpc::PUT_END, req, deadline);
  };
  if (commits.size() == 1 && revokes.size() == 1) {
    return once(0, commit_keys.size(), revoke_keys);
  }
  // Too big for one frame: commits then revokes, a chunk per request, codes in the same order.
  rpc::CodesReply all;
  for (auto [begin, end] : commits) AppendCodes(all, once(begin, end, {}), end - begin);
  for (auto [begin, end] : revokes) {
    AppendCodes(all, once(0, 0, revoke_keys.subspan(begin, end - begin)), end - begin);
  }
  return all;
}

Result<rpc::GetReplicaListReply> MasterClient::GetReplicaList(std::span<const std::string> keys,
                                                              bool no_lease, Deadline deadline,
                                                              uint32_t read_pace_ns_per_kib) {
  auto once = [&](std::span<const std::string> part) {
    rpc::KeysRequest req = KeysOf(part);
    req.set_no_lease(no_lease);
    req.set_read_pace_ns_per_kib(read_pace_ns_per_kib);
    return CallReleasing<rpc::GetReplicaListReply>(rpc::GET_REPLICA_LIST, req, deadline);
  };
  auto chunks = ChunksOf(keys);
  if (chunks.size() == 1) return once(keys);
  // Too big for one frame: a request per chunk; a failed chunk fails its own keys. The lease is
  // the shortest granted (each runs from its own answer, all after the caller asked).
  rpc::GetReplicaListReply all;
  bool leased = false;
  for (auto [begin, end] : chunks) {
    auto part = once(keys.subspan(begin, end - begin));
    AppendChunk(
        *all.mutable_objects(), part,
        [](rpc::GetReplicaListReply & r) -> auto& { return *r.mutable_objects(); }, end - begin,
        "GET_REPLICA_LIST");
    if (part.ok()) {
      all.set_lease_ttl_ms(leased ? std::min(all.lease_ttl_ms(), part->lease_ttl_ms())
                                  : part->lease_ttl_ms());
      if (!leased) {
        // The first chunk's registration check stands for all: they were granted together.
        all.set_lease_id(part->lease_id());
        all.set_client_handle(part->client_handle());
        all.set_client_ttl_ms(part->client_ttl_ms());
        all.set_leader_epoch(part->leader_epoch());
      } else if (part->lease_id() != 0) {
        all.add_more_lease_ids(part->lease_id());
      }
      leased = true;
    }
  }
  return all;
}

Result<rpc::CodesReply> MasterClient::Exists(std::span<const std::string_view> keys,
                                             Deadline deadline) {
  return CodesByChunk(keys, [&](std::span<const std::string_view> part) {
    rpc::KeysRequest req;
    req.set_client_id(client_id_);
    req.set_packed_keys(PackKeys(part));
    return CallReleasing<rpc::CodesReply>(rpc::EXISTS, req, deadline);
  });
}

Result<uint32_t> MasterClient::ExistsPrefix(std::span<const std::string_view> keys,
                                            Deadline deadline) {
  // Chunk by chunk while every key so far exists: the first chunk with a gap ends the prefix.
  uint32_t count = 0;
  for (auto [begin, end] : ChunksOf(keys)) {
    rpc::KeysRequest req = KeysOf(keys.subspan(begin, end - begin));
    auto r = CallReleasing<rpc::ExistsPrefixReply>(rpc::EXISTS_PREFIX, req, deadline);
    if (!r.ok()) return r.status();
    if (r->count() > end - begin) {  // callers index the batch by it
      return Status(ErrorCode::INTERNAL_ERROR,
                    fmt::format("master {} answered EXISTS_PREFIX with {} keys of {}",
                                master().ToString(), r->count(), end - begin));
    }
    count += r->count();
    if (r->count() < end - begin) break;
  }
  return count;
}

Result<rpc::CodesReply> MasterClient::Remove(std::span<const std::string> keys, bool force,
                                             Deadline deadline) {
  return CodesByChunk(keys, [&](std::span<const std::string> part) {
    rpc::KeysRequest req = KeysOf(part);
    req.set_force(force);
    return CallReleasing<rpc::CodesReply>(rpc::REMOVE, req, deadline,
                                          ReleaseOrder::kAfterReleasesInFlight);
  });
}

Result<uint64_t> MasterClient::RemoveAll(bool force, Deadline deadline) {
  rpc::RemoveAll req;
  req.set_client_id(client_id_);
  req.set_force(force);
  auto r = CallReleasing<rpc::RemoveAllReply>(rpc::REMOVE_ALL, req, deadline,
                                              ReleaseOrder::kAfterReleasesInFlight);
  if (!r.ok()) return r.status();
  return r->removed();
}

Result<rpc::ScanKeysReply> MasterClient::ScanKeys(rpc::ScanKeys req, Deadline deadline) {
  req.set_client_id(client_id_);
  return CallReleasing<rpc::ScanKeysReply>(rpc::SCAN_KEYS, req, deadline);
}

Result<rpc::StatReply> MasterClient::Stat(Deadline deadline) {
  return CallFor<rpc::StatReply>(rpc::STAT, rpc::Empty(), deadline);
}

}  // namespace kvpool::master
