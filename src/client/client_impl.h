// The Client behind include/kvpool/client.h. Split by path: client_impl.cc (set-up, queries,
// removal, lifecycle), put_path.cc (put/upsert batches), get_path.cc (get batches).
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/buffer_registry.h"
#include "kvpool/client.h"
#include "master/master_client.h"
#include "node/heartbeat.h"
#include "node/segment_host.h"
#include "rpc/connection_pool.h"
#include "transfer/local_transport.h"
#include "transfer/tcp_transport.h"

namespace kvpool::client {

// One object's memory on the caller's side: its buffers in order.
using Buffers = std::vector<iovec>;
// Where object `index` of a get batch goes, once its size is known. An empty list means "no
// buffer" (INVALID_PARAMS); a list shorter than the object means BUFFER_OVERFLOW.
using DestFor = std::function<Buffers(size_t index, uint64_t object_size)>;

class ClientImpl : public Client {
 public:
  explicit ClientImpl(const ClientOptions& options);
  ~ClientImpl() override;
  Status Init();

  Status RegisterBuffer(void* ptr, size_t size) override;
  Status UnregisterBuffer(void* ptr) override;
  Status PutFrom(const std::string& key, const void* ptr, size_t size,
                 const ReplicateConfig& config) override;
  Result<uint64_t> GetInto(const std::string& key, void* ptr, size_t size) override;
  std::vector<Status> BatchPutFrom(const std::vector<std::string>& keys,
                                   const std::vector<const void*>& ptrs,
                                   const std::vector<size_t>& sizes,
                                   const ReplicateConfig& config) override;
  std::vector<Result<uint64_t>> BatchGetInto(const std::vector<std::string>& keys,
                                             const std::vector<void*>& ptrs,
                                             const std::vector<size_t>& sizes) override;
  std::vector<Status> BatchPutFromMultiBuffers(const std::vector<std::string>& keys,
                                               const std::vector<std::vector<const void*>>& ptrs,
                                               const std::vector<std::vector<size_t>>& sizes,
                                               const ReplicateConfig& config) override;
  std::vector<Result<uint64_t>> BatchGetIntoMultiBuffers(
      const std::vector<std::string>& keys, const std::vector<std::vector<void*>>& ptrs,
      const std::vector<std::vector<size_t>>& sizes) override;
  std::vector<Status> BatchUpsertFrom(const std::vector<std::string>& keys,
                                      const std::vector<const void*>& ptrs,
                                      const std::vector<size_t>& sizes,
                                      const ReplicateConfig& config) override;
  std::vector<Status> BatchPut(const std::vector<std::string>& keys,
                               const std::vector<std::span<const uint8_t>>& values,
                               const ReplicateConfig& config) override;
  std::vector<Result<std::vector<uint8_t>>> BatchGet(const std::vector<std::string>& keys) override;
  Result<bool> IsExist(const std::string& key) override;
  std::vector<Result<bool>> BatchIsExist(const std::vector<std::string>& keys) override;
  Result<size_t> ExistsPrefix(const std::vector<std::string>& keys) override;
  Result<uint64_t> GetSize(const std::string& key) override;
  Status Remove(const std::string& key, bool force) override;
  std::vector<Status> BatchRemove(const std::vector<std::string>& keys, bool force) override;
  Result<uint64_t> RemoveAll(bool force) override;
  Result<PoolStat> Stat() override;
  int HealthCheck() override;
  Status Close() override;
  std::string SegmentName() const override { return host_ ? host_->name() : std::string(); }

 private:
  // put_path.cc
  std::vector<Status> PutBatch(const std::vector<std::string>& keys,
                               const std::vector<Buffers>& sources, const ReplicateConfig& config,
                               bool upsert);
  // get_path.cc
  // Keys whose `pre` status is not OK are skipped (their result is that status).
  std::vector<Result<uint64_t>> GetBatch(const std::vector<std::string>& keys,
                                         const std::vector<Status>& pre, const DestFor& dest_for);

  // The transport that reaches `segment_name`: memcpy for our own segment, TCP otherwise.
  transfer::Transport& TransportFor(const std::string& segment_name);
  // UNAVAILABLE_IN_CURRENT_STATUS after Close().
  Status CheckOpen() const;
  Deadline RpcDeadline() const { return DeadlineAfter(options_.rpc_timeout); }
  Deadline TransferDeadline() const { return DeadlineAfter(options_.transfer_timeout); }
  void MountOwnSegment();

  const ClientOptions options_;
  const std::string client_id_;
  std::unique_ptr<master::MasterClient> master_;
  rpc::ConnectionPool data_pool_;
  transfer::TcpTransport tcp_{&data_pool_};
  std::unique_ptr<node::SegmentHost> host_;  // embedded mode only
  std::unique_ptr<transfer::LocalTransport> local_;
  std::unique_ptr<node::Heartbeat> heartbeat_;
  BufferRegistry buffers_;
  std::atomic<bool> closed_{false};
};

// Validates parallel vectors and turns (ptrs, sizes) into per-object Buffers checked against
// the registry. Per-object failures land in `errors` (OK where usable).
template <typename Ptr>
std::vector<Buffers> ToBuffers(const BufferRegistry& registry, const std::vector<std::string>& keys,
                               const std::vector<std::vector<Ptr>>& ptrs,
                               const std::vector<std::vector<size_t>>& sizes,
                               std::vector<Status>& errors);

}  // namespace kvpool::client
