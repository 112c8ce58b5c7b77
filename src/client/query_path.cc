// Metadata-only calls: existence, size, removal, stats, health, close.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "client/client_impl.h"
#include "client/master_queries.h"
#include "client/pool_stat_proto.h"
#include "common/keys.h"

namespace kvpool::client {
Result<bool> ClientImpl::IsExist(const std::string& key) {
  const std::string_view one[] = {key};
  return BatchIsExist(std::span<const std::string_view>(one))[0];
}

std::vector<Result<bool>> ClientImpl::BatchIsExist(std::span<const std::string_view> keys) {
  if (Status st = CheckOpen(); !st.ok()) return std::vector<Result<bool>>(keys.size(), st);
  return AskExists(*master_, keys, RpcDeadline());
}

Result<size_t> ClientImpl::ExistsPrefix(std::span<const std::string_view> keys) {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  return AskExistsPrefix(*master_, keys, RpcDeadline());
}

Result<uint64_t> ClientImpl::GetSize(const std::string& key) {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  KVPOOL_RETURN_IF_ERROR(ValidateKey(key));
  std::vector<std::string> one = {key};
  auto r = master_->GetReplicaList(one, /*no_lease=*/true, RpcDeadline());
  if (!r.ok()) return r.status();
  if (r->objects_size() != 1) return Status(ErrorCode::INTERNAL_ERROR, "reply size mismatch");
  const auto& loc = r->objects(0);
  if (loc.code() != 0) return Status(ErrorCodeFromInt(loc.code()), loc.message());
  return loc.size();
}

Status ClientImpl::Remove(const std::string& key, bool force) {
  return BatchRemove({key}, force)[0];
}

std::vector<Status> ClientImpl::BatchRemove(const std::vector<std::string>& keys, bool force) {
  std::vector<Status> status;
  std::vector<size_t> sent;
  if (Status st = CheckOpen(); !st.ok()) return std::vector<Status>(keys.size(), st);
  std::vector<std::string> copy;
  const auto& valid = ValidKeys(keys, status, sent, &copy);
  if (!sent.empty())
    SpreadCodes(master_->Remove(valid, force, RpcDeadline()), sent, status, nullptr);
  return status;
}

Result<uint64_t> ClientImpl::RemoveAll(bool force) {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  return master_->RemoveAll(force, RpcDeadline());
}

Result<Client::KeyScanPage> ClientImpl::ScanKeys(const std::string& prefix,
                                                 const std::string& cursor, uint32_t limit) {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  rpc::ScanKeys req;
  req.set_prefix(prefix);
  req.set_cursor(cursor);
  req.set_limit(limit);
  auto r = master_->ScanKeys(std::move(req), RpcDeadline());
  if (!r.ok()) return r.status();
  KeyScanPage page;
  page.keys.assign(r->keys().begin(), r->keys().end());
  page.next_cursor = r->next_cursor();
  return page;
}

Result<PoolStat> ClientImpl::Stat() {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  auto r = master_->Stat(RpcDeadline());
  if (!r.ok()) return r.status();
  return PoolStatFromProto(*r);
}

int ClientImpl::HealthCheck() {
  if (closed_.load()) return 1;
  return master_->Ping(RpcDeadline()).ok() ? 0 : 2;
}

Status ClientImpl::Close() {
  if (closed_.exchange(true)) return Status::Ok();
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
  return Status::Ok();
}

}  // namespace kvpool::client
