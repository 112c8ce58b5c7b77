// The Client behind include/kvpool/client.h and client/embedded/hosted_client.h; private to
// src/client (the node sees only hosted_client.h). Split by path: client_impl.cc (set-up, queries,
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

#include "client/embedded/buffer_registry.h"
#include "client/embedded/hosted_client.h"
#include "client/embedded/lease_flusher.h"
#include "client/embedded/peer_health.h"
#include "client/embedded/transfer_pace.h"
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

  // ---- HostedClient (client/embedded/hosted_client.h): what `kvpool node` uses beyond Client ----
  std::vector<Status> PutVouched(const ObjectBatch& batch, const ReplicateConfig& config,
                                 bool upsert, Deadline limit) override;
  std::vector<Result<uint64_t>> GetVouched(const ObjectBatch& batch, Deadline limit,
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

 private:
  // ---- The operations of Client (include/kvpool/client.h) ----
  Status RegisterMemory(void* ptr, size_t size) override;
  Status UnregisterMemory(void* ptr) override;
  void PutObjects(const ObjectBatch& batch, const ReplicateConfig& config, bool upsert,
                  bool registered, std::vector<Status>& results) override;
  void GetObjects(const ObjectBatch& batch, std::vector<Result<uint64_t>>& results) override;
  std::vector<Result<std::vector<uint8_t>>> GetCopies(
      const std::vector<std::string>& keys) override;
  // query_path.cc
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
  std::string OwnSegment() const override { return host_ ? host_->name() : std::string(); }

  // put_path.cc
  // Puts the objects whose results[i] is OK on entry (checked by batch_check.h), within
  // `limit`; sets their results.
  void PutBatch(const ObjectBatch& batch, const ReplicateConfig& config, bool upsert,
                Deadline limit, std::vector<Status>& results);
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
  // Writes the results of the objects whose results[i] is OK on entry.
  void PutPass(const ObjectBatch& batch, const ReplicateConfig& config, bool upsert, Deadline limit,
               std::set<std::string>* unreachable, PutRetries* retries,
               std::vector<Status>& results);
  // get_path.cc
  // Gets the keys whose results[i] is OK on entry (valid keys) into dest_for's buffers and
  // sets their results. Each key is read from its nearest replica and, when that read fails (or
  // its checksum does not match, with `verify` or options_.verify_checksum), from the next one,
  // within `limit`.
  void GetBatch(const std::vector<std::string>& keys, const DestFor& dest_for, Deadline limit,
                bool verify, std::vector<Result<uint64_t>>& results);

  // Why the read lease of `located` (asked for at `asked`) cannot vouch for a transfer that
  // ends now: outlived its TTL, or this client was declared dead meanwhile; empty when it holds.
  std::string LeaseLost(const rpc::GetReplicaListReply& located, Clock::time_point asked,
                        Deadline limit);
  // The transport that reaches `segment_name`: memcpy for our own segment, TCP otherwise.
  transfer::Transport& TransportFor(const std::string& segment_name);
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
  TransferPace write_pace_;    // told to the master with PUT_START
  TransferPace read_pace_;     // told to the master with GET_REPLICA_LIST
  transfer::TcpTransport tcp_{&data_pool_};
  std::unique_ptr<hosting::SegmentHost> host_;  // embedded mode only
  std::unique_ptr<transfer::LocalTransport> local_;
  // Reads of this client's own disk tier segment, without a socket (null without one).
  std::unique_ptr<transfer::TierTransport> own_tier_;
  std::unique_ptr<hosting::Heartbeat> heartbeat_;
  std::unique_ptr<LeaseFlusher> lease_flusher_;  // sends finished leases no request carried
  BufferRegistry buffers_;
};

}  // namespace kvpool::client
