// Typed client stub of the master's RPCs, for storage nodes and the client library.
//
// One method per RPC; each makes exactly one attempt (no retries: the caller knows whether a
// retry is safe) and fails by its deadline. Errors common to every method: RPC_FAIL (master
// unreachable, connection broken), RPC_TIMEOUT (deadline passed), INVALID_VERSION, and the
// master's refusal of the whole request (INVALID_PARAMS, NOT_SUPPORTED). Per-key outcomes are in
// the reply, as documented on MasterCore.
//
// Threading: thread-safe; concurrent calls use separate pooled connections.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/time.h"
#include "kvpool/status.h"
#include "rpc/connection_pool.h"
#include "rpc/endpoint.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::master {

class MasterClient {
 public:
  // One put of PutStart: `key` and its size in bytes. The view must be valid during the call.
  struct PutItem {
    std::string_view key;
    uint64_t size = 0;
  };

  // The batch methods below send a batch too big for one frame (common/key_chunks.h) as
  // several requests, in order, transparently: the reply is the same as for one request, a
  // chunk that fails (RPC_FAIL, RPC_TIMEOUT, ...) reporting its error for its own keys only.

  // Calls the master at `master` as `client_id` (sent in every request that names a client).
  // `pool` may be shared with other stubs; null makes a private one.
  MasterClient(rpc::Endpoint master, std::string client_id,
               std::shared_ptr<rpc::ConnectionPool> pool = nullptr);

  const std::string& client_id() const { return client_id_; }
  const rpc::Endpoint& master() const { return master_; }

  Result<rpc::PingReply> Ping(Deadline deadline);
  // A ping with journal acks and a long-poll wait (`req.client_id` is filled in).
  Result<rpc::PingReply> Ping(rpc::Ping req, Deadline deadline);
  // Errors: SEGMENT_ALREADY_EXISTS; INVALID_PARAMS.
  Result<rpc::MountSegmentReply> MountSegment(std::string_view segment_name,
                                              std::string_view endpoint, uint64_t size,
                                              Deadline deadline);
  // A mount of memory `incarnation` (transfer::SegmentMemory::incarnation; a restarted host's
  // new memory replaces its dead segment at the master) that re-registers the segment's objects
  // (one chunk; `more` when others follow).
  Result<rpc::MountSegmentReply> MountSegment(std::string_view segment_name,
                                              std::string_view endpoint, uint64_t size,
                                              uint64_t incarnation,
                                              std::span<const rpc::StoredObject> objects, bool more,
                                              Deadline deadline);
  // Errors: SEGMENT_NOT_FOUND; ILLEGAL_CLIENT.
  Status UnmountSegment(std::string_view segment_name, Deadline deadline);
  // No new replicas on the segment (`undo`: again). Errors: SEGMENT_NOT_FOUND; ILLEGAL_CLIENT.
  Status DrainSegment(std::string_view segment_name, bool undo, Deadline deadline);

  // One result per item, same order. `client_host`: the writer's host, for same-host
  // placement ("" unknown).
  Result<rpc::PutStartReply> PutStart(std::span<const PutItem> items,
                                      const rpc::ReplicateConfig& config, bool upsert,
                                      Deadline deadline, std::string_view client_host = {});
  // Codes for `commit_keys` then `revoke_keys`, in order. `commit_checksums` is empty or
  // parallel to `commit_keys` (each object's XXH3-64).
  Result<rpc::CodesReply> PutEnd(std::span<const std::string> commit_keys,
                                 std::span<const uint64_t> commit_checksums,
                                 std::span<const std::string> revoke_keys, Deadline deadline);
  // One location per key; `no_lease` takes no read lease (size queries).
  Result<rpc::GetReplicaListReply> GetReplicaList(std::span<const std::string> keys, bool no_lease,
                                                  Deadline deadline);
  // Per key: 1 exists, 0 not, negative error.
  Result<rpc::CodesReply> Exists(std::span<const std::string> keys, Deadline deadline);
  // Number of leading keys that exist.
  Result<uint32_t> ExistsPrefix(std::span<const std::string> keys, Deadline deadline);
  Result<rpc::CodesReply> Remove(std::span<const std::string> keys, bool force, Deadline deadline);
  // Number of objects removed.
  Result<uint64_t> RemoveAll(bool force, Deadline deadline);
  Result<rpc::StatReply> Stat(Deadline deadline);

 private:
  Status Call(rpc::Method method, const google::protobuf::MessageLite& request,
              google::protobuf::MessageLite* response, Deadline deadline);
  template <typename Reply>
  Result<Reply> CallFor(rpc::Method method, const google::protobuf::MessageLite& request,
                        Deadline deadline);
  rpc::KeysRequest KeysOf(std::span<const std::string> keys) const;
  Result<rpc::PutStartReply> PutStartOnce(std::span<const PutItem> items,
                                          const rpc::ReplicateConfig& config, bool upsert,
                                          Deadline deadline, std::string_view client_host);

  const rpc::Endpoint master_;
  const std::string client_id_;
  const std::shared_ptr<rpc::ConnectionPool> pool_;
};

}  // namespace kvpool::master
