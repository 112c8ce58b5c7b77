#include "master/grant_issuer.h"

#include <algorithm>

namespace kvpool::master {
namespace {

std::chrono::milliseconds Bounded(std::chrono::milliseconds v) {
  return std::clamp(v, std::chrono::milliseconds(0), GrantIssuer::kMaxValidity);
}

}  // namespace

GrantIssuer::GrantIssuer(std::string_view pool_secret, std::chrono::milliseconds read_validity,
                         std::chrono::milliseconds write_validity)
    : key_(pool_secret),
      read_validity_(Bounded(read_validity)),
      write_validity_(Bounded(write_validity)) {}

GrantIssuer GrantIssuer::For(const MasterOptions& options) {
  return GrantIssuer(
      options.security.auth_secret, options.default_kv_lease_ttl + kMargin,
      std::chrono::duration_cast<std::chrono::milliseconds>(options.put_start_discard_timeout_sec) +
          kMargin);
}

void GrantIssuer::Sign(rpc::Replica& replica, rpc::GrantMode mode, uint64_t expiry_ms) const {
  key_.Sign(replica.segment_name(), replica.segment_incarnation(), replica.offset(),
            replica.length(), mode, expiry_ms, replica.mutable_grant());
}

void GrantIssuer::Attach(rpc::PutStartReply& reply, uint64_t now_unix_ms) const {
  if (!enabled()) return;
  const uint64_t expiry = now_unix_ms + static_cast<uint64_t>(write_validity_.count());
  for (rpc::PutStartResult& result : *reply.mutable_results()) {
    for (rpc::Replica& r : *result.mutable_replicas()) Sign(r, rpc::GrantMode::kWrite, expiry);
  }
}

void GrantIssuer::Attach(rpc::GetReplicaListReply& reply, uint64_t now_unix_ms) const {
  if (!enabled()) return;
  const uint64_t expiry = now_unix_ms + static_cast<uint64_t>(read_validity_.count());
  for (rpc::ObjectLocation& object : *reply.mutable_objects()) {
    for (rpc::Replica& r : *object.mutable_replicas()) Sign(r, rpc::GrantMode::kRead, expiry);
  }
}

}  // namespace kvpool::master
