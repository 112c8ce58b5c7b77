#include "client/embedded/client_impl.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "client/client_security.h"
#include "client/shared/batch_check.h"
#include "common/keys.h"
#include "common/random_id.h"
#include "ha/etcd_address.h"
#include "rpc/endpoint.h"

namespace kvpool {

Result<std::unique_ptr<Client>> Client::Setup(const ClientOptions& options) {
  auto impl = std::make_unique<client::ClientImpl>(options);
  KVPOOL_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Client>(std::move(impl));
}

namespace client {

std::unique_ptr<HostedClient> MakeHostedClient(const ClientOptions& options,
                                               HostingOptions hosting) {
  return std::make_unique<ClientImpl>(options, std::move(hosting));
}

namespace {

// Sets results[i] (OK on entry) of each object with a buffer outside every registered region.
template <typename R>
void CheckRegistered(const BufferRegistry& registry, const ObjectBatch& batch,
                     std::vector<R>& results) {
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!results[i].ok()) continue;
    for (const iovec& b : batch.buffers(i)) {
      if (registry.Check(b.iov_base, b.iov_len, {}).ok()) continue;
      // Again, naming the key: formatting it costs more than the check, so only on failure.
      results[i] = registry.Check(b.iov_base, b.iov_len, fmt::format("key={}", batch.key(i)));
      break;
    }
  }
}

// A get into the batch's own buffers: object i's, whatever its size.
DestFor IntoBuffersOf(const ObjectBatch& batch) {
  return [&batch](size_t i, uint64_t) {
    auto b = batch.buffers(i);
    return Buffers(b.begin(), b.end());
  };
}

// Threads that move a batch's parts beside the caller's: one core fewer than the machine has
// (the caller's thread is the other), at most 3 (beyond that a batch's parts are too small).
int TransferWorkers(int configured) {
  if (configured > 0) return configured;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores - 1, 1, 3);
}

}  // namespace

ClientImpl::ClientImpl(const ClientOptions& options, HostingOptions hosting)
    : options_(options),
      hosting_(std::move(hosting)),
      client_id_(RandomId()),
      data_pool_("client " + client_id_),
      transfer_workers_(TransferWorkers(hosting_.transfer_threads)),
      peer_health_(5 * options.silent_peer_timeout) {}

ClientImpl::~ClientImpl() { (void)Close(); }

Status ClientImpl::Init() {
  if (options_.protocol == "rdma") {
    return Status(ErrorCode::NOT_SUPPORTED,
                  "protocol 'rdma' is not available in this build; use 'tcp'");
  }
  if (options_.protocol != "tcp") {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("protocol '{}' is unknown; use 'tcp'", options_.protocol));
  }
  if (options_.silent_peer_timeout < Millis(100) ||
      options_.silent_peer_timeout > Millis(3600000)) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("silent_peer_timeout_ms={} is out of range [100, 3600000]",
                              options_.silent_peer_timeout.count()));
  }
  auto master =
      ha::ParseMasterAddress(options_.master_server_address, 50051, "master_server_address");
  if (!master.ok()) return master.status();
  if ((!options_.disk_path.empty() || options_.disk_size > 0) &&
      options_.global_segment_size == 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("disk_path={} disk_size={}: a disk tier sits below a contributed "
                              "segment; set global_segment_size too",
                              options_.disk_path, options_.disk_size));
  }
  if (options_.global_segment_size > 0) {
    KVPOOL_RETURN_IF_ERROR(ChooseAnnouncedHost(*master));
    // Peers reach the segment by this name: one that does not resolve would mount a segment
    // nobody can read (the data server itself listens on bind_host either way).
    KVPOOL_RETURN_IF_ERROR(rpc::CheckResolvable(options_.local_hostname, "local_hostname"));
  }
  auto security = ResolveClientSecurity(options_);
  if (!security.ok()) return security.status();
  data_pool_.SetConnectOptions(security->connect);
  master_ = master::MasterClient::For(
      *master, client_id_, std::make_shared<rpc::ConnectionPool>(client_id_, 8, security->connect));
  if (hosting_.require_master) {
    // First contact doubles as the reachability check: a wrong address fails Setup, not a put.
    auto ping = master_->Ping(RpcDeadline());
    if (!ping.ok()) return ping.status();
  }
  if (options_.global_segment_size > 0) {
    hosting::SegmentHostOptions ho;
    ho.advertise_host = options_.local_hostname;
    ho.bind_host = hosting_.bind_host.empty() ? rpc::DefaultBindAddress(options_.local_hostname)
                                              : hosting_.bind_host;
    ho.port = options_.segment_port;
    // As Mooncake's transfer engine: firewall rules and its tests expect this range.
    ho.port_range = {kSegmentPortFirst, kSegmentPortLast};
    ho.size = options_.global_segment_size;
    ho.memory.huge_pages = options_.use_hugepage;
    ho.memory.transparent_huge_pages = hosting_.transparent_huge_pages;
    ho.memory.prefault = hosting_.prefault || options_.prefault_segment;
    ho.memory.prefault_in_background =
        hosting_.prefault_in_background.value_or(options_.prefault_segment_in_background);
    ho.io_threads = hosting_.io_threads;
    ho.zero_copy_min_bytes = options_.zero_copy_send_min_bytes;
    // Without a secret, peers on other hosts are refused unless the owner opted out.
    ho.protected_mode = !options_.insecure;
    ho.insecure_hint = hosting_.insecure_hint;
    ho.security = security->server;
    if (!options_.disk_path.empty() || options_.disk_size > 0) {
      hosting::DiskHostOptions dh;
      dh.tier.dir = options_.disk_path;
      dh.tier.size = options_.disk_size;
      dh.tier.queue_depth = options_.disk_queue_depth;
      dh.promote_after_hits = options_.disk_promote_after;
      dh.rpc_timeout = options_.rpc_timeout;
      ho.disk = dh;
    }
    auto host = hosting::SegmentHost::Start(ho);
    if (!host.ok()) return host.status();
    host_ = std::move(host).value();
    local_ = std::make_unique<transfer::LocalTransport>(&host_->table(), host_->write_recorder());
    if (host_->disk() != nullptr) {
      own_tier_ = std::make_unique<transfer::TierTransport>(host_->disk());
    }
    Status mounted = hosting_.mount_at_init ? host_->Mount(*master_, RpcDeadline()) : Status::Ok();
    if (!mounted.ok()) {
      if (hosting_.require_master) return mounted;
      spdlog::warn("segment={} not mounted yet: error={} (will retry)", host_->name(),
                   mounted.ToString());
    }
  }
  heartbeat_ = std::make_unique<hosting::Heartbeat>(
      master_.get(), options_.heartbeat_interval, options_.rpc_timeout,
      [this] { (void)MountOwnSegment(); }, host_.get());
  // Without mount_at_init the heartbeat (which mounts a segment the master does not know)
  // waits for MountSegmentNow too.
  if (hosting_.mount_at_init || host_ == nullptr) heartbeat_->Start();
  lease_flusher_ =
      std::make_unique<LeaseFlusher>(master_.get(), kLeaseFlushDelay, options_.rpc_timeout);
  return Status::Ok();
}

Status ClientImpl::ChooseAnnouncedHost(const ha::MasterAddress& master) {
  const std::string given = options_.local_hostname;
  if (!given.empty() && (!rpc::IsLoopbackHost(given) || ha::MasterIsLoopback(master))) {
    return Status::Ok();
  }
  auto detected = ha::LocalAddressTowardMaster(master, "master_server_address");
  if (!detected.ok()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("local_hostname='{}': cannot tell this host's address toward the "
                              "master ({}); give local_hostname, the address other hosts reach "
                              "this process by",
                              given, detected.status().message()));
  }
  if (!given.empty()) {
    spdlog::info(
        "local_hostname={} is a loopback address but the master {} is not: announcing "
        "{} (this host's address toward the master) instead",
        given, master.ToString(), *detected);
  }
  options_.local_hostname = *detected;
  return Status::Ok();
}

void ClientImpl::MountSegmentNow() {
  Status st = MountOwnSegment();
  heartbeat_->NoteMasterCall(st);
  if (!hosting_.mount_at_init && host_ != nullptr) heartbeat_->Start();
}

Status ClientImpl::MountOwnSegment() {
  if (host_ == nullptr) return Status::Ok();
  Status st = host_->Mount(*master_, RpcDeadline());
  if (!st.ok()) spdlog::warn("mount of segment={} failed: {}", host_->name(), st.ToString());
  return st;
}

transfer::Transport& ClientImpl::TransportFor(const std::string& segment_name) {
  if (local_ != nullptr && segment_name == host_->name()) return *local_;
  if (own_tier_ != nullptr && segment_name == host_->disk()->name()) return *own_tier_;
  return tcp_;
}

Status ClientImpl::RegisterMemory(void* ptr, size_t size) { return buffers_.Register(ptr, size); }

Status ClientImpl::UnregisterMemory(void* ptr) { return buffers_.Unregister(ptr); }

void ClientImpl::PutObjects(const ObjectBatch& batch, const ReplicateConfig& config, bool upsert,
                            bool registered, std::vector<Status>& results) {
  // The copying calls' memory needs no registration: nothing but this process reads it.
  if (registered) CheckRegistered(buffers_, batch, results);
  PutBatch(batch, config, upsert, Deadline::max(), results);
}

void ClientImpl::GetObjects(const ObjectBatch& batch, std::vector<Result<uint64_t>>& results) {
  CheckRegistered(buffers_, batch, results);
  GetBatch(batch.keys(), IntoBuffersOf(batch), Deadline::max(), /*verify=*/false, results);
}

std::vector<Status> ClientImpl::PutVouched(const ObjectBatch& batch, const ReplicateConfig& config,
                                           bool upsert, Deadline limit) {
  if (Status st = CheckOpen(); !st.ok()) return std::vector<Status>(batch.size(), st);
  if (Status st = CheckPlacement(config, batch.size()); !st.ok()) {
    return std::vector<Status>(batch.size(), st);
  }
  std::vector<Status> results(batch.size());
  CheckPutObjects(batch, results);
  PutBatch(batch, config, upsert, limit, results);
  return results;
}

std::vector<Result<uint64_t>> ClientImpl::GetVouched(const ObjectBatch& batch, Deadline limit,
                                                     bool verify_checksum) {
  std::vector<Result<uint64_t>> results(batch.size(), uint64_t{0});
  if (Status st = CheckOpen(); !st.ok()) results.assign(batch.size(), st);
  CheckGetKeys(batch.keys(), results);
  GetBatch(batch.keys(), IntoBuffersOf(batch), limit, verify_checksum, results);
  return results;
}

std::vector<Result<uint64_t>> ClientImpl::GetWithDest(const std::vector<std::string>& keys,
                                                      const DestFor& dest_for, Deadline limit,
                                                      bool verify_checksum) {
  std::vector<Result<uint64_t>> results(keys.size(), uint64_t{0});
  if (Status st = CheckOpen(); !st.ok()) results.assign(keys.size(), st);
  CheckGetKeys(keys, results);
  GetBatch(keys, dest_for, limit, verify_checksum, results);
  return results;
}

Status ClientImpl::DrainOwnSegment() {
  if (host_ == nullptr) {
    return Status(ErrorCode::UNAVAILABLE_IN_CURRENT_MODE, "drain: this client hosts no segment");
  }
  return master_->DrainSegment(host_->name(), /*undo=*/false, RpcDeadline());
}

bool ClientImpl::MasterReachable() const {
  return heartbeat_ != nullptr && heartbeat_->master_reachable();
}

uint16_t ClientImpl::SegmentPort() const { return host_ ? host_->port() : 0; }

std::vector<Result<std::vector<uint8_t>>> ClientImpl::GetCopies(
    const std::vector<std::string>& keys) {
  std::vector<std::vector<uint8_t>> values(keys.size());
  std::vector<Result<uint64_t>> sizes(keys.size(), uint64_t{0});
  CheckGetKeys(keys, sizes);
  GetBatch(
      keys,
      [&values](size_t i, uint64_t n) {
        values[i].resize(n);
        return Buffers{{values[i].data(), n}};
      },
      Deadline::max(), /*verify=*/false, sizes);
  std::vector<Result<std::vector<uint8_t>>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (sizes[i].ok()) {
      out.emplace_back(std::move(values[i]));
    } else {
      out.emplace_back(sizes[i].status());
    }
  }
  return out;
}

}  // namespace client
}  // namespace kvpool
