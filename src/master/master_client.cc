#include "master/master_client.h"

#include "common/keys.h"

namespace kvpool::master {

MasterClient::MasterClient(rpc::Endpoint master, std::string client_id,
                           std::shared_ptr<rpc::ConnectionPool> pool)
    : master_(std::move(master)),
      client_id_(std::move(client_id)),
      pool_(pool ? std::move(pool) : std::make_shared<rpc::ConnectionPool>(client_id_)) {}

Status MasterClient::Call(rpc::Method method, const google::protobuf::MessageLite& request,
                          google::protobuf::MessageLite* response, Deadline deadline) {
  auto conn = pool_->Acquire(master_, deadline);
  if (!conn.ok()) return conn.status();
  return (*conn)->Call(method, request, response, deadline);
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

void MasterClient::TakeReleases(google::protobuf::RepeatedField<uint64_t>* out) {
  std::lock_guard lock(release_mu_);
  if (releases_.empty()) return;
  out->Add(releases_.begin(), releases_.end());
  releases_.clear();
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
  TakeReleases(req.mutable_lease_ids());
  if (req.lease_ids().empty()) return Status::Ok();
  rpc::Empty reply;
  Status st = Call(rpc::LEASE_RELEASE, req, &reply, deadline);
  if (!st.ok()) ReturnReleases(req.lease_ids());
  return st;
}

template <typename Reply, typename Req>
Result<Reply> MasterClient::CallReleasing(rpc::Method method, Req& request, Deadline deadline) {
  TakeReleases(request.mutable_released_leases());
  auto r = CallFor<Reply>(method, request, deadline);
  if (!r.ok()) ReturnReleases(request.released_leases());
  return r;
}

rpc::KeysRequest MasterClient::KeysOf(std::span<const std::string> keys) const {
  rpc::KeysRequest req;
  req.set_client_id(client_id_);
  req.mutable_keys()->Reserve(static_cast<int>(keys.size()));
  for (const std::string& k : keys) req.add_keys(k);
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
  return MountSegment(segment_name, endpoint, size, {}, false, deadline);
}

Result<rpc::MountSegmentReply> MasterClient::MountSegment(
    std::string_view segment_name, std::string_view endpoint, uint64_t size,
    std::span<const rpc::StoredObject> objects, bool more, Deadline deadline) {
  rpc::MountSegment req;
  req.set_client_id(client_id_);
  req.set_segment_name(std::string(segment_name));
  req.set_endpoint(std::string(endpoint));
  req.set_size(size);
  req.mutable_objects()->Reserve(static_cast<int>(objects.size()));
  for (const rpc::StoredObject& o : objects) *req.add_objects() = o;
  req.set_more_objects(more);
  return CallFor<rpc::MountSegmentReply>(rpc::MOUNT_SEGMENT, req, deadline);
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
                                                  Deadline deadline, std::string_view client_host) {
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
  return CallReleasing<rpc::PutStartReply>(rpc::PUT_START, req, deadline);
}

Result<rpc::CodesReply> MasterClient::PutEnd(std::span<const std::string> commit_keys,
                                             std::span<const uint64_t> commit_checksums,
                                             std::span<const std::string> revoke_keys,
                                             Deadline deadline) {
  rpc::PutEnd req;
  req.set_client_id(client_id_);
  for (const std::string& k : commit_keys) req.add_commit_keys(k);
  for (uint64_t c : commit_checksums) req.add_commit_checksums(c);
  for (const std::string& k : revoke_keys) req.add_revoke_keys(k);
  return CallFor<rpc::CodesReply>(rpc::PUT_END, req, deadline);
}

Result<rpc::GetReplicaListReply> MasterClient::GetReplicaList(std::span<const std::string> keys,
                                                              bool no_lease, Deadline deadline) {
  rpc::KeysRequest req = KeysOf(keys);
  req.set_no_lease(no_lease);
  return CallReleasing<rpc::GetReplicaListReply>(rpc::GET_REPLICA_LIST, req, deadline);
}

Result<rpc::CodesReply> MasterClient::Exists(std::span<const std::string> keys, Deadline deadline) {
  rpc::KeysRequest req;
  req.set_client_id(client_id_);
  req.set_packed_keys(PackKeys(keys));
  return CallReleasing<rpc::CodesReply>(rpc::EXISTS, req, deadline);
}

Result<uint32_t> MasterClient::ExistsPrefix(std::span<const std::string> keys, Deadline deadline) {
  rpc::KeysRequest req = KeysOf(keys);
  auto r = CallReleasing<rpc::ExistsPrefixReply>(rpc::EXISTS_PREFIX, req, deadline);
  if (!r.ok()) return r.status();
  return r->count();
}

Result<rpc::CodesReply> MasterClient::Remove(std::span<const std::string> keys, bool force,
                                             Deadline deadline) {
  rpc::KeysRequest req = KeysOf(keys);
  req.set_force(force);
  return CallReleasing<rpc::CodesReply>(rpc::REMOVE, req, deadline);
}

Result<uint64_t> MasterClient::RemoveAll(bool force, Deadline deadline) {
  rpc::RemoveAll req;
  req.set_client_id(client_id_);
  req.set_force(force);
  auto r = CallReleasing<rpc::RemoveAllReply>(rpc::REMOVE_ALL, req, deadline);
  if (!r.ok()) return r.status();
  return r->removed();
}

Result<rpc::StatReply> MasterClient::Stat(Deadline deadline) {
  return CallFor<rpc::StatReply>(rpc::STAT, rpc::Empty(), deadline);
}

}  // namespace kvpool::master
