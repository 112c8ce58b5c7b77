// The Client behind include/kvpool/client.h and client/hosted_client.h; private to src/client
// (the node sees only hosted_client.h). Split by path: client_impl.cc (set-up, queries,
// removal, lifecycle), put_path.cc (put/upsert batches), get_path.cc (get batches).
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client/buffer_registry.h"
#include "client/hosted_client.h"
#include "client/lease_flusher.h"
#include "client/peer_health.h"
#include "common/task_pool.h"
#include "hosting/heartbeat.h"
#include "hosting/segment_host.h"
#include "kvpool/client.h"
#include "master_client/master_client.h"
#include "rpc/connection_pool.h"
#include "transfer/local_transport.h"
#include "transfer/tcp_transport.h"
#include "transfer/tier_transport.h"

namespace kvpool::client {

class ClientImpl : public HostedClient {
 public:
  explicit ClientImpl(const ClientOptions& options, HostingOptions hosting = {});
  ~ClientImpl() override;
  Status Init() override;

  // ---- HostedClient (client/hosted_client.h): what `kvpool node` uses beyond Client ----
  std::vector<Status> PutVouched(const std::vector<std::string>& keys,
                                 const std::vector<Buffers>& sources, const ReplicateConfig& config,
                                 bool upsert, Deadline limit) override;
  std::vector<Result<uint64_t>> GetVouched(const std::vector<std::string>& keys,
                                           const std::vector<Buffers>& dests, Deadline limit,
                                           bool verify_checksum) override;
  std::vector<Result<uint64_t>> GetWithDest(const std::vector<std::string>& keys,
                                            const DestFor& dest_for, Deadline limit,
                                            bool verify_checksum) override;
  bool MasterReachable() const override;
  Status DrainOwnSegment() override;
  // drain_copy.cc
  DrainCopyReport CopySoleReplicasAway(Deadline until) override;
  uint16_t SegmentPort() const override;
  void MountSegmentNow() override;
  std::optional<hosting::DiskHostStats> DiskStats() const override {
    if (host_ == nullptr || host_->disk() == nullptr) return std::nullopt;
    return host_->disk()->stats();
  }
  const transfer::DataServiceCounters* DataCounters() const override {
    return host_ != nullptr ? &host_->counters() : nullptr;
  }

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
  using Client::BatchIsExist;  // and ExistsPrefix: the std::string forms
  using Client::ExistsPrefix;
  std::vector<Result<bool>> BatchIsExist(std::span<const std::string_view> keys) override;
  Result<size_t> ExistsPrefix(std::span<const std::string_view> keys) override;
  Result<uint64_t> GetSize(const std::string& key) override;
  Status Remove(const std::string& key, bool force) override;
  std::vector<Status> BatchRemove(const std::vector<std::string>& keys, bool force) override;
  Result<uint64_t> RemoveAll(bool force) override;
  Result<KeyScanPage> ScanKeys(const std::string& prefix, const std::string& cursor,
                               uint32_t limit) override;
  Result<PoolStat> Stat() override;
  int HealthCheck() override;
  Status Close() override;
  std::string SegmentName() const override { return host_ ? host_->name() : std::string(); }

 private:
  // The batch calls of the public Client, their buffers checked against the registry.
  // Like BatchPutFromMultiBuffers (upsert: like BatchUpsertFrom, with several buffers per
  // object), with every wait also bounded by `limit`.
  std::vector<Status> PutMulti(const std::vector<std::string>& keys,
                               const std::vector<std::vector<const void*>>& ptrs,
                               const std::vector<std::vector<size_t>>& sizes,
                               const ReplicateConfig& config, bool upsert, Deadline limit);
  // Like BatchGetIntoMultiBuffers, with every wait also bounded by `limit`.
  // `verify_checksum` checks each object's bytes as ClientOptions::verify_checksum does (either
  // one turns the check on).
  std::vector<Result<uint64_t>> GetMulti(const std::vector<std::string>& keys,
                                         const std::vector<std::vector<void*>>& ptrs,
                                         const std::vector<std::vector<size_t>>& sizes,
                                         Deadline limit, bool verify_checksum = false);
  // put_path.cc
  std::vector<Status> PutBatch(const std::vector<std::string>& keys,
                               const std::vector<Buffers>& sources, const ReplicateConfig& config,
                               bool upsert, Deadline limit);
  // What one pass of PutBatch leaves to do.
  struct PutRetries {
    // Keys refused because the pool's room is held by objects whose copy to a disk tier is
    // pending (PutStartResult.offload_pending); their results are that NO_AVAILABLE_HANDLE.
    std::vector<size_t> waiting;
    // Keys whose write failed because a replica's host did not answer (RPC_FAIL, RPC_TIMEOUT:
    // dead or hung); revoked, their results are that error. Placed again elsewhere.
    std::vector<size_t> replace;
  };
  // One PUT_START, WRITE, PUT_END pass of PutBatch, placing no replica on a segment named in
  // *unreachable; adds to it the segments whose hosts did not answer (and tells the master in
  // PUT_END, which then stops placing there until the host pings again).
  std::vector<Status> PutPass(const std::vector<std::string>& keys,
                              const std::vector<Buffers>& sources, const ReplicateConfig& config,
                              bool upsert, Deadline limit, std::set<std::string>* unreachable,
                              PutRetries* retries);
  // get_path.cc
  // Keys whose `pre` status is not OK are skipped (their result is that status). Each key is
  // read from its nearest replica and, when that read fails (or its checksum does not match,
  // with `verify` or options_.verify_checksum), from the next one, within `limit`.
  std::vector<Result<uint64_t>> GetBatch(const std::vector<std::string>& keys,
                                         const std::vector<Status>& pre, const DestFor& dest_for,
                                         Deadline limit, bool verify = false);

  // Why the read lease of `located` (asked for at `asked`) cannot vouch for a transfer that
  // ends now: outlived its TTL, or this client was declared dead meanwhile; empty when it holds.
  std::string LeaseLost(const rpc::GetReplicaListReply& located, Clock::time_point asked,
                        Deadline limit);
  // The transport that reaches `segment_name`: memcpy for our own segment, TCP otherwise.
  transfer::Transport& TransportFor(const std::string& segment_name);
  // UNAVAILABLE_IN_CURRENT_STATUS after Close().
  Status CheckOpen() const;
  // Deadlines of one control call / one data phase, never past `limit`.
  Deadline RpcDeadline(Deadline limit = Deadline::max()) const {
    return std::min(DeadlineAfter(options_.rpc_timeout), limit);
  }
  Deadline TransferDeadline(Deadline limit = Deadline::max()) const {
    return std::min(DeadlineAfter(options_.transfer_timeout), limit);
  }
  Status MountOwnSegment();
  // Init: replaces an empty local_hostname, or a loopback one while the master is elsewhere,
  // with this host's address toward the master (ClientOptions::local_hostname).
  Status ChooseAnnouncedHost(const ha::MasterAddress& master);

  // The range a segment's data port is picked from when segment_port is 0 (Mooncake's).
  static constexpr uint16_t kSegmentPortFirst = 12300;
  static constexpr uint16_t kSegmentPortLast = 14300;
  // How long a finished read lease waits for a request to carry it before the flusher sends it.
  static constexpr Clock::duration kLeaseFlushDelay = std::chrono::milliseconds(2);

  // Init may fill in local_hostname (ChooseAnnouncedHost); constant after Init.
  ClientOptions options_;
  const HostingOptions hosting_;
  const std::string client_id_;
  std::unique_ptr<master::MasterClient> master_;
  rpc::ConnectionPool data_pool_;
  TaskPool transfer_workers_;  // runs a batch's transfer parts in parallel (TransferPlan)
  PeerHealth peer_health_;     // segment hosts found silent lately (reads try them last)
  transfer::TcpTransport tcp_{&data_pool_};
  std::unique_ptr<hosting::SegmentHost> host_;  // embedded mode only
  std::unique_ptr<transfer::LocalTransport> local_;
  // Reads of this client's own disk tier segment, without a socket (null without one).
  std::unique_ptr<transfer::TierTransport> own_tier_;
  std::unique_ptr<hosting::Heartbeat> heartbeat_;
  std::unique_ptr<LeaseFlusher> lease_flusher_;  // sends finished leases no request carried
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
