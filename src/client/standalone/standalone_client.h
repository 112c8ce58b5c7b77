// The Client returned by Client::SetupStandalone: a light client attached to the `kvpool node`
// on its host. It owns no segment and never touches the pool's bytes: every batch names the
// caller's memory as (region id, offset, length) inside HostMemAllocator allocations it shared
// with the node, and the node moves the bytes. Split by path: standalone_client.cc (set-up,
// registration, metadata calls, lifecycle), standalone_data.cc (zero-copy batches),
// standalone_copy.cc (copying calls through the staging buffer).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/standalone/node_link.h"
#include "client/standalone/region_table.h"
#include "kvpool/client.h"
#include "kvpool/host_allocator.h"
#include "master_client/master_client.h"

namespace kvpool::client {

// The Unix socket a standalone client reaches for `server_address` (see StandaloneOptions).
// Errors: INVALID_PARAMS naming the address.
Result<std::string> StandaloneSocketName(const std::string& server_address);

class StandaloneClient : public Client {
 public:
  StandaloneClient(const StandaloneOptions& options, std::string socket_name);
  ~StandaloneClient() override;
  // Attaches, allocates and registers the staging buffer, starts the heartbeat.
  Status Init();

 private:
  // ---- The operations of Client (include/kvpool/client.h) ----
  // standalone_client.cc
  Status RegisterMemory(void* ptr, size_t size) override;
  Status UnregisterMemory(void* ptr) override;
  std::vector<Result<bool>> ExistKeys(std::span<const std::string_view> keys) override;
  Result<size_t> CountExistingPrefix(std::span<const std::string_view> keys) override;
  Result<uint64_t> SizeOf(const std::string& key) override;
  std::vector<Status> RemoveKeys(const std::vector<std::string>& keys, bool force) override;
  Result<uint64_t> RemoveEvery(bool force) override;
  Result<KeyScanPage> ScanPage(const std::string& prefix, const std::string& cursor,
                               uint32_t limit) override;
  Result<PoolStat> PoolStats() override;
  int Health() override;
  void Shutdown() override;
  std::string OwnSegment() const override { return link_->segment_name(); }
  // standalone_data.cc (registered memory) and standalone_copy.cc (the copying calls)
  void PutObjects(const ObjectBatch& batch, const ReplicateConfig& config, bool upsert,
                  bool registered, std::vector<Status>& results) override;
  void GetObjects(const ObjectBatch& batch, std::vector<Result<uint64_t>>& results) override;
  std::vector<Result<std::vector<uint8_t>>> GetCopies(
      const std::vector<std::string>& keys) override;

  // standalone_data.cc: one LOCAL_PUT / LOCAL_GET of the batch's slices (a batch within one
  // frame), for the objects whose results[i] is OK on entry.
  void PutSlices(const ObjectBatch& batch, const ReplicateConfig& config, bool upsert,
                 std::vector<Status>& results);
  void GetSlices(const ObjectBatch& batch, std::vector<Result<uint64_t>>& results);
  // Sends one LOCAL_PUT for the objects of `req`, whose batch indexes are `sent`.
  void SendPut(rpc::LocalPut& req, const std::vector<size_t>& sent, std::vector<Status>& out);
  // Sends one LOCAL_GET; `reply` is checked to have one entry per object.
  Status SendGet(rpc::LocalGet& req, rpc::LocalGetReply* reply);

  // standalone_copy.cc
  // The copying put of a batch within one frame: packed into the staging buffer.
  void PutCopies(const ObjectBatch& batch, const ReplicateConfig& config,
                 std::vector<Status>& results);
  // Object i of `batch` through a temporary shared allocation (larger than the staging buffer).
  Status PutThroughTemporary(const ObjectBatch& batch, size_t i, const ReplicateConfig& config);
  Result<std::vector<uint8_t>> GetThroughTemporary(const std::string& key, uint64_t size);
  // Shares `ptr` (a HostMemAllocator allocation) with the node as a staging region.
  Result<uint64_t> RegisterStagingRegion(void* ptr, uint64_t size);
  void UnregisterRegionAtNode(uint64_t region_id);

  // The deadline the node must finish a data call by; the client waits a grace period longer
  // so that no reply (and no write into its pages) can come after it gave up.
  Deadline DataDeadline() const;
  static Deadline WaitDeadline(Deadline node_deadline);
  Deadline RpcDeadline() const { return DeadlineAfter(options_.rpc_timeout); }
  // Whether exists and prefix queries go to master_ now (set, and the node attached).
  bool DirectQueries() const;
  // Queries relayed by the node (the path when master_ is null or could not be reached).
  std::vector<Result<bool>> RelayedExists(std::span<const std::string_view> keys);
  Result<size_t> RelayedExistsPrefix(std::span<const std::string_view> keys);

  const StandaloneOptions options_;
  const std::string socket_name_;
  const std::string client_id_;
  HostMemAllocator allocator_;
  RegionTable regions_;
  std::unique_ptr<NodeLink> link_;
  // The master itself, when the node named it at attach (a pool that asks no credential):
  // exists and prefix queries go there in one hop instead of through the node. Set by Init.
  std::unique_ptr<master::MasterClient> master_;
  std::mutex register_mu_;  // serializes RegisterBuffer / UnregisterBuffer

  std::mutex staging_mu_;  // one copying call at a time uses the staging buffer
  uint8_t* staging_ = nullptr;
  uint64_t staging_size_ = 0;
  uint64_t staging_region_ = 0;
};

}  // namespace kvpool::client
