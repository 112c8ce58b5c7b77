// Standalone client: set-up, buffer registration (the rule the seed document is about),
// metadata calls and lifecycle.
#include "client/standalone/standalone_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "client/shared/address_range.h"
#include "client/standalone/host_memory_registry.h"
#include "client/standalone/key_chunked.h"
#include "client/shared/master_queries.h"
#include "client/shared/pool_stat_proto.h"
#include "common/key_chunks.h"
#include "common/random_id.h"
#include "ha/etcd_address.h"
#include "rpc/endpoint.h"

namespace kvpool {

Result<std::unique_ptr<Client>> Client::SetupStandalone(const StandaloneOptions& options) {
  auto socket = client::StandaloneSocketName(options.server_address);
  if (!socket.ok()) return socket.status();
  if (options.rpc_timeout.count() <= 0 || options.transfer_timeout.count() <= 0 ||
      options.heartbeat_interval.count() <= 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  "rpc_timeout, transfer_timeout and heartbeat_interval must be > 0");
  }
  auto impl = std::make_unique<client::StandaloneClient>(options, *socket);
  KVPOOL_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Client>(std::move(impl));
}

namespace client {
namespace {

constexpr uint64_t kDefaultStagingBytes = 64ull << 20;

// The error a standalone client gives for memory the node cannot map (the seed's situation).
Status NotHostAllocated(const void* ptr, size_t size, const std::string& reason) {
  return Status(
      ErrorCode::UNAVAILABLE_IN_CURRENT_MODE,
      fmt::format(
          "register_buffer(ptr={}, size={}) refused: in standalone mode the kvpool node maps "
          "registered memory, so it must come from kvpool's HostMemAllocator, and this range is "
          "not inside one such allocation ({}). Ways out: (1) allocate the host KV pool with "
          "kvpool's HostMemAllocator (kvpool.HostMemAllocator().alloc(size) in Python); "
          "(2) turn standalone mode off (Client::Setup / setup(), embedded mode); (3) keep this "
          "memory and use the copying calls (put/get, batch_put/batch_get), which pass through "
          "the staging buffer shared with the node",
          ptr, size, reason));
}

}  // namespace

Result<std::string> StandaloneSocketName(const std::string& server_address) {
  if (!server_address.empty() && (server_address[0] == '@' || server_address[0] == '/')) {
    return server_address;
  }
  // Strict: the port names the node's socket, so it must be given (no silent 50052 for "" or
  // "garbage"), and the host must be this machine (the node is reached through a local socket;
  // another machine's address is a mistake to report, not to ignore).
  auto ep = rpc::ParseEndpoint(server_address, 0, "server_address");
  if (!ep.ok()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("{} (the local node as HOST:PORT, e.g. 127.0.0.1:50052, or its "
                              "socket as @name or /path)",
                              ep.status().message()));
  }
  KVPOOL_RETURN_IF_ERROR(
      rpc::CheckLocalHost(ep->host, fmt::format("server_address '{}'", server_address)));
  return fmt::format("@kvpool_node_{}.sock", ep->port);
}

StandaloneClient::StandaloneClient(const StandaloneOptions& options, std::string socket_name)
    : options_(options), socket_name_(std::move(socket_name)), client_id_(RandomId()) {
  NodeLinkOptions lo;
  lo.socket_name = socket_name_;
  lo.client_id = client_id_;
  lo.rpc_timeout = options_.rpc_timeout;
  lo.heartbeat_interval = options_.heartbeat_interval;
  lo.mem_pool_size = options_.mem_pool_size;
  lo.local_buffer_size =
      options_.local_buffer_size > 0 ? options_.local_buffer_size : kDefaultStagingBytes;
  link_ = std::make_unique<NodeLink>(lo, [this] { return regions_.Regions(); });
}

StandaloneClient::~StandaloneClient() { (void)Close(); }

Status StandaloneClient::Init() {
  KVPOOL_RETURN_IF_ERROR(link_->Attach(RpcDeadline()));
  if (std::string address = link_->master_server_address(); !address.empty()) {
    auto master = ha::ParseMasterAddress(address, 50051, "master_server_address");
    if (master.ok()) {
      master_ = master::MasterClient::For(*master, client_id_);
    } else {  // the node's own flag parsed there: not expected; keep relaying
      spdlog::warn("node named master {}: {} (queries stay relayed by the node)", address,
                   master.status().ToString());
    }
  }
  staging_size_ =
      options_.local_buffer_size > 0 ? options_.local_buffer_size : kDefaultStagingBytes;
  auto mem = allocator_.Alloc(staging_size_);
  if (!mem.ok()) {
    return Status(mem.code(), "staging buffer (local_buffer_size): " + mem.status().message());
  }
  staging_ = static_cast<uint8_t*>(*mem);
  auto region = RegisterStagingRegion(staging_, staging_size_);
  if (!region.ok()) return region.status();
  staging_region_ = *region;
  link_->StartHeartbeat();
  return Status::Ok();
}

Deadline StandaloneClient::DataDeadline() const {
  // A put is three phases at the node: PUT_START, the transfer, PUT_END.
  return DeadlineAfter(2 * options_.rpc_timeout + options_.transfer_timeout);
}

Deadline StandaloneClient::WaitDeadline(Deadline node_deadline) {
  return node_deadline + std::chrono::seconds(1);
}

Result<uint64_t> StandaloneClient::RegisterStagingRegion(void* ptr, uint64_t size) {
  auto found = HostMemoryRegistry::Instance().Find(ptr, size);
  if (!found.ok()) return found.status();
  Region r;
  r.id = regions_.NextId();
  r.alloc_id = found->allocation.id;
  r.base = found->allocation.base;
  r.size = found->allocation.size;
  r.staging = true;
  r.fd = std::make_shared<rpc::UniqueFd>(std::move(found->fd));
  rpc::RegisterRegion msg;
  msg.set_region_id(r.id);
  msg.set_size(r.size);
  msg.set_staging(true);
  int fd = r.fd->get();
  const uint64_t id = r.id;
  // In the table before the node hears of it, so a re-attach in between registers it too.
  regions_.AddRegion(std::move(r));
  Status st = link_->Control(rpc::REGISTER_REGION, msg, nullptr, RpcDeadline(), {&fd, 1});
  if (!st.ok()) {
    regions_.RemoveRegion(id);
    return st;
  }
  return id;
}

void StandaloneClient::UnregisterRegionAtNode(uint64_t region_id) {
  rpc::UnregisterRegion msg;
  msg.set_region_id(region_id);
  Status st = link_->Control(rpc::UNREGISTER_REGION, msg, nullptr, RpcDeadline());
  if (!st.ok()) {
    // The node releases it with the session at the latest.
    spdlog::debug("unregister of region={} at the node failed: error={}", region_id, st.ToString());
  }
}

Status StandaloneClient::RegisterMemory(void* ptr, size_t size) {
  KVPOOL_RETURN_IF_ERROR(CheckAddressRange(ptr, size, "register_buffer"));
  const auto start = reinterpret_cast<uintptr_t>(ptr);
  if (size == 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("register_buffer(ptr={}, size=0): the size must be > 0", ptr));
  }
  std::lock_guard<std::mutex> lock(register_mu_);
  auto found = HostMemoryRegistry::Instance().Find(ptr, size);
  if (!found.ok()) {
    if (found.code() != ErrorCode::UNAVAILABLE_IN_CURRENT_MODE) return found.status();
    return NotHostAllocated(ptr, size, found.status().message());
  }
  uint64_t region_id = 0;
  if (auto region = regions_.OfAllocation(found->allocation.id); region != nullptr) {
    region_id = region->id;  // another range of an allocation the node has already mapped
  } else {
    Region r;
    r.id = region_id = regions_.NextId();
    r.alloc_id = found->allocation.id;
    r.base = found->allocation.base;
    r.size = found->allocation.size;
    r.fd = std::make_shared<rpc::UniqueFd>(std::move(found->fd));
    rpc::RegisterRegion msg;
    msg.set_region_id(r.id);
    msg.set_size(r.size);
    int fd = r.fd->get();
    regions_.AddRegion(std::move(r));
    Status st = link_->Control(rpc::REGISTER_REGION, msg, nullptr, RpcDeadline(), {&fd, 1});
    if (!st.ok()) {
      regions_.RemoveRegion(region_id);
      return st;
    }
  }
  for (const Region& orphan : regions_.AddRange(start, size, region_id)) {
    UnregisterRegionAtNode(orphan.id);
  }
  return Status::Ok();
}

Status StandaloneClient::UnregisterMemory(void* ptr) {
  std::lock_guard<std::mutex> lock(register_mu_);
  auto orphans = regions_.RemoveRange(reinterpret_cast<uintptr_t>(ptr));
  if (!orphans.ok()) return orphans.status();
  for (const Region& orphan : *orphans) UnregisterRegionAtNode(orphan.id);
  return Status::Ok();
}

namespace {

template <typename Keys>  // of std::string or std::string_view
rpc::KeysRequest KeysOf(const Keys& keys, bool force = false) {
  rpc::KeysRequest req;
  req.mutable_keys()->Reserve(static_cast<int>(std::size(keys)));
  for (const auto& k : keys) req.add_keys(k.data(), k.size());
  req.set_force(force);
  return req;
}

// Per key statuses of a CodesReply (codes <= 0; 1 also counts as OK).
std::vector<Status> StatusesOf(const Status& call, const rpc::CodesReply& reply, size_t n) {
  if (call.ok() && reply.codes_size() != static_cast<int>(n)) {
    return std::vector<Status>(n, Status(ErrorCode::INTERNAL_ERROR, "node reply size mismatch"));
  }
  std::vector<Status> out(n, call);
  if (!call.ok()) return out;
  for (size_t i = 0; i < n; ++i) {
    int32_t code = reply.codes(static_cast<int>(i));
    if (code < 0) {
      std::string msg = static_cast<int>(i) < reply.messages_size()
                            ? reply.messages(static_cast<int>(i))
                            : std::string();
      out[i] = Status(ErrorCodeFromInt(code), msg);
    }
  }
  return out;
}

}  // namespace

namespace {

// The master could not be reached at all (it may be reachable through the node still, e.g. a
// master address the node resolves differently): worth one try through the node.
bool Unreached(const Status& st) { return st.code() == ErrorCode::RPC_FAIL; }

}  // namespace

bool StandaloneClient::DirectQueries() const {
  // While the node is down its engines see the pool as down (RPC_FAIL from the relay), as a
  // put or get would: the master may still list the node's objects it cannot know are gone.
  // A node restarted since Init may name no master any more (a secret was set): then relay.
  return master_ != nullptr && link_->up() && link_->names_master();
}

std::vector<Result<bool>> StandaloneClient::ExistKeys(std::span<const std::string_view> keys) {
  if (DirectQueries()) {
    std::vector<Result<bool>> out = AskExists(*master_, keys, RpcDeadline());
    if (std::none_of(out.begin(), out.end(),
                     [](const Result<bool>& r) { return Unreached(r.status()); })) {
      return out;
    }
  }
  return RelayedExists(keys);
}

std::vector<Result<bool>> StandaloneClient::RelayedExists(std::span<const std::string_view> keys) {
  if (auto chunks = KeyChunks(keys); chunks.size() > 1) {  // too big for one frame
    return ConcatChunks(chunks,
                        [&](size_t b, size_t e) { return RelayedExists(keys.subspan(b, e - b)); });
  }
  rpc::CodesReply reply;
  Status call = link_->Data(rpc::LOCAL_EXISTS, KeysOf(keys), &reply, RpcDeadline());
  auto status = StatusesOf(call, reply, keys.size());
  std::vector<Result<bool>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!status[i].ok()) {
      out.emplace_back(status[i]);
    } else {
      out.emplace_back(reply.codes(static_cast<int>(i)) == 1);
    }
  }
  return out;
}

Result<size_t> StandaloneClient::CountExistingPrefix(std::span<const std::string_view> keys) {
  if (DirectQueries()) {
    Result<size_t> direct = AskExistsPrefix(*master_, keys, RpcDeadline());
    if (!Unreached(direct.status())) return direct;
  }
  return RelayedExistsPrefix(keys);
}

Result<size_t> StandaloneClient::RelayedExistsPrefix(std::span<const std::string_view> keys) {
  // Chunk by chunk (a batch too big for one frame) while every key so far exists.
  size_t count = 0;
  for (auto [begin, end] : KeyChunks(keys)) {
    rpc::ExistsPrefixReply reply;
    KVPOOL_RETURN_IF_ERROR(link_->Data(
        rpc::LOCAL_EXISTS_PREFIX, KeysOf(keys.subspan(begin, end - begin)), &reply, RpcDeadline()));
    count += reply.count();
    if (reply.count() < end - begin) break;
  }
  return count;
}

Result<uint64_t> StandaloneClient::SizeOf(const std::string& key) {
  rpc::LocalGetReply reply;
  KVPOOL_RETURN_IF_ERROR(link_->Data(rpc::LOCAL_GET_SIZE, KeysOf(std::vector<std::string>{key}),
                                     &reply, RpcDeadline()));
  if (reply.codes_size() != 1 || reply.sizes_size() != 1 || reply.messages_size() != 1) {
    return Status(ErrorCode::INTERNAL_ERROR, "node reply size mismatch");
  }
  if (reply.codes(0) != 0) return Status(ErrorCodeFromInt(reply.codes(0)), reply.messages(0));
  return reply.sizes(0);
}

std::vector<Status> StandaloneClient::RemoveKeys(const std::vector<std::string>& keys, bool force) {
  if (auto chunks = KeyChunks(keys); chunks.size() > 1) {  // too big for one frame
    return ConcatChunks(chunks,
                        [&](size_t b, size_t e) { return RemoveKeys(PartOf(keys, b, e), force); });
  }
  rpc::CodesReply reply;
  Status call = link_->Data(rpc::LOCAL_REMOVE, KeysOf(keys, force), &reply, RpcDeadline());
  return StatusesOf(call, reply, keys.size());
}

Result<uint64_t> StandaloneClient::RemoveEvery(bool force) {
  rpc::RemoveAll req;
  req.set_force(force);
  rpc::RemoveAllReply reply;
  KVPOOL_RETURN_IF_ERROR(link_->Data(rpc::LOCAL_REMOVE_ALL, req, &reply, RpcDeadline()));
  return reply.removed();
}

Result<Client::KeyScanPage> StandaloneClient::ScanPage(const std::string& prefix,
                                                       const std::string& cursor, uint32_t limit) {
  rpc::ScanKeysReply r;
  KVPOOL_RETURN_IF_ERROR(
      link_->Data(rpc::LOCAL_SCAN_KEYS, ScanRequest(prefix, cursor, limit), &r, RpcDeadline()));
  return PageOf(r);
}

Result<PoolStat> StandaloneClient::PoolStats() {
  rpc::StatReply r;
  KVPOOL_RETURN_IF_ERROR(link_->Data(rpc::LOCAL_STAT, rpc::Empty(), &r, RpcDeadline()));
  return PoolStatFromProto(r);
}

int StandaloneClient::Health() { return link_->Health(); }

void StandaloneClient::Shutdown() {
  link_->Close();  // the node drops the session and unmaps this process's memory
  std::lock_guard<std::mutex> lock(staging_mu_);
  if (staging_ != nullptr) {
    (void)allocator_.Free(staging_);
    staging_ = nullptr;
  }
  regions_.Clear();
}

}  // namespace client
}  // namespace kvpool
