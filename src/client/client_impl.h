// The Client behind include/kvpool/client.h. Split by path: client_impl.cc (set-up, queries,
// removal, lifecycle), put_path.cc (put/upsert batches), get_path.cc (get batches).
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/buffer_registry.h"
#include "client/lease_flusher.h"
#include "common/task_pool.h"
#include "hosting/heartbeat.h"
#include "hosting/segment_host.h"
#include "kvpool/client.h"
#include "master_client/master_client.h"
#include "rpc/connection_pool.h"
#include "transfer/local_transport.h"
#include "transfer/tcp_transport.h"

namespace kvpool::client {

// One object's memory on the caller's side: its buffers in order.
using Buffers = std::vector<iovec>;
// Where object `index` of a get batch goes, once its size is known. An empty list means "no
// buffer" (INVALID_PARAMS); a list shorter than the object means BUFFER_OVERFLOW.
using DestFor = std::function<Buffers(size_t index, uint64_t object_size)>;

// What `kvpool node` sets beyond ClientOptions when it runs its store through a ClientImpl.
struct HostingOptions {
  std::string bind_host = "0.0.0.0";  // the data server's listen address
  bool prefault = false;              // fault the segment in at start (blocking)
  // Fault it in on a thread of its own after start (unset: ClientOptions decides).
  std::optional<bool> prefault_in_background;
  bool transparent_huge_pages = false;  // SegmentMemoryOptions::transparent_huge_pages
  int io_threads = 2;                   // data server threads
  // Without a secret, the data port refuses peers from other hosts (a node unless --insecure;
  // rpc::ServerOptions::protected_mode).
  bool protected_mode = false;
  // Threads that move one batch's bytes besides the caller's (0: one per core but one, 1 to 3).
  int transfer_threads = 0;
  // true: Init fails when the master is unreachable (a client's set-up). false (a node): Init
  // succeeds and the heartbeat mounts the segment once the master answers.
  bool require_master = true;
  // false (a node): Init does not mount the segment; the node calls MountSegmentNow() once its
  // own servers (the attach socket) listen, so nobody finds the segment listed at the master
  // before the node can serve every client it advertises itself to.
  bool mount_at_init = true;
};

// What CopySoleReplicasAway did, per object of the segment.
struct DrainCopyReport {
  size_t copied = 0;     // the only replica was here; now one is elsewhere
  size_t skipped = 0;    // another replica exists, or the object is gone
  size_t failed = 0;     // could not be copied (no room elsewhere, leased, master unreachable)
  size_t not_tried = 0;  // the time bound ran out first
};

class ClientImpl : public Client {
 public:
  explicit ClientImpl(const ClientOptions& options, HostingOptions hosting = {});
  ~ClientImpl() override;
  Status Init();

  // ---- Entry points for the node's attach service (not part of the public Client) ----
  // Puts and gets of memory the caller has already checked and keeps mapped until the
  // call returns (the attach service's regions of a session): no registry check, so a node
  // need not register its sessions' regions with its own store.
  // Per-key results and errors as BatchPutFromMultiBuffers / BatchGetIntoMultiBuffers; every
  // wait is also bounded by `limit`.
  std::vector<Status> PutVouched(const std::vector<std::string>& keys,
                                 const std::vector<Buffers>& sources, const ReplicateConfig& config,
                                 bool upsert, Deadline limit);
  std::vector<Result<uint64_t>> GetVouched(const std::vector<std::string>& keys,
                                           const std::vector<Buffers>& dests, Deadline limit,
                                           bool verify_checksum = false);
  // A get whose destinations are chosen once sizes are known (`dest_for`, called on this
  // thread, at most once per key); the memory need not be registered: the caller vouches for it.
  std::vector<Result<uint64_t>> GetWithDest(const std::vector<std::string>& keys,
                                            const DestFor& dest_for, Deadline limit,
                                            bool verify_checksum = false);
  // True while the master answers the heartbeat.
  bool MasterReachable() const;
  // Asks the master to place no new replicas on the contributed segment (graceful stop).
  // Errors: UNAVAILABLE_IN_CURRENT_MODE (no segment); as MasterClient::DrainSegment.
  Status DrainOwnSegment();
  // drain_copy.cc: copies every object whose only replica is in the contributed segment to
  // other segments (an upsert from this segment's memory), until `until`. Call after
  // DrainOwnSegment. While an object is being copied, readers may briefly see it missing.
  DrainCopyReport CopySoleReplicasAway(Deadline until);
  // The data port of the contributed segment (0 when none).
  uint16_t SegmentPort() const;
  // With HostingOptions::mount_at_init false: mounts the contributed segment at the master and
  // starts the heartbeat. A failed mount is logged and the heartbeat mounts the segment once the
  // master answers. Call once, after Init, from the thread that called Init.
  void MountSegmentNow();
  // The counters of the contributed segment's data service (null when none).
  // The disk tier's figures (node metrics); nullopt without one.
  std::optional<hosting::DiskHostStats> DiskStats() const {
    if (host_ == nullptr || host_->disk() == nullptr) return std::nullopt;
    return host_->disk()->stats();
  }
  const transfer::DataServiceCounters* DataCounters() const {
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
  std::vector<Result<bool>> BatchIsExist(const std::vector<std::string>& keys) override;
  Result<size_t> ExistsPrefix(const std::vector<std::string>& keys) override;
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

  // How long a finished read lease waits for a request to carry it before the flusher sends it.
  static constexpr Clock::duration kLeaseFlushDelay = std::chrono::milliseconds(2);

  const ClientOptions options_;
  const HostingOptions hosting_;
  const std::string client_id_;
  std::unique_ptr<master::MasterClient> master_;
  rpc::ConnectionPool data_pool_;
  TaskPool transfer_workers_;  // runs a batch's transfer parts in parallel (TransferPlan)
  transfer::TcpTransport tcp_{&data_pool_};
  std::unique_ptr<hosting::SegmentHost> host_;  // embedded mode only
  std::unique_ptr<transfer::LocalTransport> local_;
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
