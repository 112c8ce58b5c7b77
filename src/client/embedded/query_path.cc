// Metadata-only calls: existence, size, removal, stats, health, close.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "client/embedded/client_impl.h"
#include "client/shared/master_queries.h"
#include "client/shared/pool_stat_proto.h"
#include "common/keys.h"

namespace kvpool::client {
std::vector<Result<bool>> ClientImpl::ExistKeys(std::span<const std::string_view> keys) {
  return AskExists(*master_, keys, RpcDeadline());
}

Result<size_t> ClientImpl::CountExistingPrefix(std::span<const std::string_view> keys) {
  return AskExistsPrefix(*master_, keys, RpcDeadline());
}

Result<uint64_t> ClientImpl::SizeOf(const std::string& key) {
  KVPOOL_RETURN_IF_ERROR(ValidateKey(key));
  std::vector<std::string> one = {key};
  auto r = master_->GetReplicaList(one, /*no_lease=*/true, RpcDeadline());
  if (!r.ok()) return r.status();
  if (r->objects_size() != 1) return Status(ErrorCode::INTERNAL_ERROR, "reply size mismatch");
  const auto& loc = r->objects(0);
  if (loc.code() != 0) return Status(ErrorCodeFromInt(loc.code()), loc.message());
  return loc.size();
}

std::vector<Status> ClientImpl::RemoveKeys(const std::vector<std::string>& keys, bool force) {
  std::vector<Status> status;
  std::vector<size_t> sent;
  std::vector<std::string> copy;
  const auto& valid = ValidKeys(keys, status, sent, &copy);
  if (!sent.empty())
    SpreadCodes(master_->Remove(valid, force, RpcDeadline()), sent, status, nullptr);
  return status;
}

Result<uint64_t> ClientImpl::RemoveEvery(bool force) {
  return master_->RemoveAll(force, RpcDeadline());
}

Result<Client::KeyScanPage> ClientImpl::ScanPage(const std::string& prefix,
                                                 const std::string& cursor, uint32_t limit) {
  auto r = master_->ScanKeys(ScanRequest(prefix, cursor, limit), RpcDeadline());
  if (!r.ok()) return r.status();
  return PageOf(*r);
}

Result<PoolStat> ClientImpl::PoolStats() {
  auto r = master_->Stat(RpcDeadline());
  if (!r.ok()) return r.status();
  return PoolStatFromProto(*r);
}

int ClientImpl::Health() { return master_->Ping(RpcDeadline()).ok() ? 0 : 2; }

void ClientImpl::Shutdown() {
  if (lease_flusher_ != nullptr) {
    // A reader that closes leaves no lease behind: what is still queued goes now.
    lease_flusher_->Stop();
    Status st = master_->FlushLeaseReleases(RpcDeadline());
    if (!st.ok()) {
      spdlog::warn(
          "read leases not released at close: error={} (the master ends them at their "
          "TTL or when this client's liveness expires)",
          st.ToString());
    }
  }
  if (heartbeat_ != nullptr) heartbeat_->Stop();
  if (host_ != nullptr) {
    Status st = host_->Unmount(*master_, RpcDeadline());
    if (st.ok()) {
      spdlog::info("unmounted segment={}", host_->name());
    } else {
      spdlog::warn("unmount of segment={} failed: error={} (the master drops it after its TTL)",
                   host_->name(), st.ToString());
    }
    local_.reset();
    host_.reset();
  }
  buffers_.Clear();
  data_pool_.Clear();
}

}  // namespace kvpool::client
