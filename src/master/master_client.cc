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
  return CallFor<rpc::PingReply>(rpc::PING, req, deadline);
}

Result<rpc::PingReply> MasterClient::Ping(rpc::Ping req, Deadline deadline) {
  req.set_client_id(client_id_);
  return CallFor<rpc::PingReply>(rpc::PING, req, deadline);
}

Result<rpc::MountSegmentReply> MasterClient::MountSegment(std::string_view segment_name,
                                                          std::string_view endpoint, uint64_t size,
                                                          Deadline deadline) {
  return MountSegment(segment_name, endpoint, size, 0, {}, false, deadline);
}

Result<rpc::MountSegmentReply> MasterClient::MountSegment(
    std::string_view segment_name, std::string_view endpoint, uint64_t size, uint64_t incarnation,
    std::span<const rpc::StoredObject> objects, bool more, Deadline deadline) {
  rpc::MountSegment req;
  req.set_client_id(client_id_);
  req.set_segment_name(std::string(segment_name));
  req.set_endpoint(std::string(endpoint));
  req.set_size(size);
  req.set_incarnation(incarnation);
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
  return CallFor<rpc::PutStartReply>(rpc::PUT_START, req, deadline);
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
  return CallFor<rpc::GetReplicaListReply>(rpc::GET_REPLICA_LIST, req, deadline);
}

Result<rpc::CodesReply> MasterClient::Exists(std::span<const std::string> keys, Deadline deadline) {
  rpc::KeysRequest req;
  req.set_client_id(client_id_);
  req.set_packed_keys(PackKeys(keys));
  return CallFor<rpc::CodesReply>(rpc::EXISTS, req, deadline);
}

Result<uint32_t> MasterClient::ExistsPrefix(std::span<const std::string> keys, Deadline deadline) {
  auto r = CallFor<rpc::ExistsPrefixReply>(rpc::EXISTS_PREFIX, KeysOf(keys), deadline);
  if (!r.ok()) return r.status();
  return r->count();
}

Result<rpc::CodesReply> MasterClient::Remove(std::span<const std::string> keys, bool force,
                                             Deadline deadline) {
  rpc::KeysRequest req = KeysOf(keys);
  req.set_force(force);
  return CallFor<rpc::CodesReply>(rpc::REMOVE, req, deadline);
}

Result<uint64_t> MasterClient::RemoveAll(bool force, Deadline deadline) {
  rpc::RemoveAll req;
  req.set_client_id(client_id_);
  req.set_force(force);
  auto r = CallFor<rpc::RemoveAllReply>(rpc::REMOVE_ALL, req, deadline);
  if (!r.ok()) return r.status();
  return r->removed();
}

Result<rpc::StatReply> MasterClient::Stat(Deadline deadline) {
  return CallFor<rpc::StatReply>(rpc::STAT, rpc::Empty(), deadline);
}

}  // namespace kvpool::master
