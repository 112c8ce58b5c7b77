// Typed client stub of the master's RPCs, for storage nodes and the client library.
//
// One method per RPC; each makes exactly one attempt (no retries: the caller knows whether a
// retry is safe) and fails by its deadline. Errors common to every method: RPC_FAIL (master
// unreachable, connection broken), RPC_TIMEOUT (deadline passed), INVALID_VERSION, and the
// master's refusal of the whole request (INVALID_PARAMS, NOT_SUPPORTED). Per-key outcomes are in
// the reply, as documented on MasterCore.
//
// Read leases: a reader hands each finished lease to ReleaseLease (no I/O). The ids travel in
// the next request that names keys or the next ping (piggybacked), or in a LEASE_RELEASE that
// FlushLeaseReleases sends (a background thread's job: client/embedded/lease_flusher.h). A request
// that fails puts its ids back, so they go with the next one; the master ignores ids it has ended.
//
// Master high availability: a stub made from an etcd:// address (ha/leader_locator.h) asks etcd
// which master leads, and on RPC_FAIL, NOT_LEADER (a standby answered, or an answer carried an
// older leadership epoch than one already seen) or UNAVAILABLE_IN_CURRENT_STATUS (a new leader
// still restoring) it asks again and retries within the call's deadline: always when the
// request cannot have been applied (refused, or no connection), and after a broken connection
// only for requests that change nothing (ping, get replica list, exists, stat). A put start,
// put end, remove or mount whose connection broke mid-call fails with RPC_FAIL (per key), as
// without HA. Any stub refuses an answer whose leader_epoch is older than the newest it saw.
//
// Threading: thread-safe; concurrent calls use separate pooled connections.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "ha/etcd_address.h"
#include "ha/leader_locator.h"
#include "kvpool/status.h"
#include "rpc/connection_pool.h"
#include "rpc/endpoint.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::master {

class MasterClient {
 public:
  // One put of PutStart: `key` and its size in bytes. The view must be valid during the call.
  struct PutItem {
    std::string_view key;
    uint64_t size = 0;
  };

  // The batch methods below send a batch too big for one frame (common/key_chunks.h) as
  // several requests, in order, transparently: the reply is the same as for one request, a
  // chunk that fails (RPC_FAIL, RPC_TIMEOUT, ...) reporting its error for its own keys only.

  // Calls the master at `master` as `client_id` (sent in every request that names a client).
  // `pool` may be shared with other stubs; null makes a private one.
  MasterClient(rpc::Endpoint master, std::string client_id,
               std::shared_ptr<rpc::ConnectionPool> pool = nullptr);
  // Calls whichever master leads, as `locator` finds it (ha/leader_locator.h).
  MasterClient(std::shared_ptr<ha::LeaderLocator> locator, std::string client_id,
               std::shared_ptr<rpc::ConnectionPool> pool = nullptr);
  // A stub for `address` (ha/etcd_address.h): fixed, or through a locator for etcd://.
  static std::unique_ptr<MasterClient> For(const ha::MasterAddress& address, std::string client_id,
                                           std::shared_ptr<rpc::ConnectionPool> pool = nullptr);

  const std::string& client_id() const { return client_id_; }
  // The master called last (with a locator: the leader last found; port 0 before any).
  rpc::Endpoint master() const;
  // "host:port" or "etcd://…", for messages.
  std::string address_string() const;

  Result<rpc::PingReply> Ping(Deadline deadline);
  // A ping with journal acks and a long-poll wait (`req.client_id` is filled in).
  Result<rpc::PingReply> Ping(rpc::Ping req, Deadline deadline);
  // Errors: SEGMENT_ALREADY_EXISTS; INVALID_PARAMS.
  Result<rpc::MountSegmentReply> MountSegment(std::string_view segment_name,
                                              std::string_view endpoint, uint64_t size,
                                              Deadline deadline);
  // A mount as `req` says (incarnation, objects re-registered in chunks, tier, ...), sent with
  // this client's id.
  Result<rpc::MountSegmentReply> MountSegmentAs(rpc::MountSegment req, Deadline deadline);
  // TIER_UPDATE of disk segment `segment_name`: codes per added, then per dropped
  // (rpc::TierUpdate in kvpool.proto).
  Result<rpc::CodesReply> TierUpdate(std::string_view segment_name,
                                     std::span<const rpc::StoredObject> added,
                                     std::span<const rpc::StoredObject> dropped, Deadline deadline);
  // PROMOTE into DRAM segment req.segment_name (rpc::Promote in kvpool.proto), sent with this
  // client's id. The reply has a code (and offset) per start item and a code per commit item.
  Result<rpc::PromoteReply> Promote(rpc::Promote req, Deadline deadline);
  // Errors: SEGMENT_NOT_FOUND; ILLEGAL_CLIENT.
  Status UnmountSegment(std::string_view segment_name, Deadline deadline);
  // No new replicas on the segment (`undo`: again). Errors: SEGMENT_NOT_FOUND; ILLEGAL_CLIENT.
  Status DrainSegment(std::string_view segment_name, bool undo, Deadline deadline);

  // One result per item, same order. `client_host`: the writer's host, for same-host
  // placement ("" unknown). `write_pace_ns_per_kib`: what this client's recent writes took per
  // KiB (client/embedded/transfer_pace.h; 0: unknown), for the master's poll.
  Result<rpc::PutStartReply> PutStart(std::span<const PutItem> items,
                                      const rpc::ReplicateConfig& config, bool upsert,
                                      Deadline deadline, std::string_view client_host = {},
                                      uint32_t write_pace_ns_per_kib = 0);
  // Codes for `commit_keys` then `revoke_keys`, in order. `commit_checksums` is empty or
  // parallel to `commit_keys` (each object's XXH3-64). `unreachable_segments`: segments whose
  // hosts this writer could not reach (rpc::PutEnd.unreachable_segments). `recorded_by_host`
  // is empty or parallel to `commit_keys`: non-zero where a host listed the object when it was
  // written (rpc::PutEnd.recorded_by_host).
  Result<rpc::CodesReply> PutEnd(std::span<const std::string> commit_keys,
                                 std::span<const uint64_t> commit_checksums,
                                 std::span<const std::string> revoke_keys, Deadline deadline,
                                 std::span<const std::string> unreachable_segments = {},
                                 std::span<const char> recorded_by_host = {});
  // One location per key; `no_lease` takes no read lease (size queries). `read_pace_ns_per_kib`
  // as PutStart's write pace, for this client's reads.
  Result<rpc::GetReplicaListReply> GetReplicaList(std::span<const std::string> keys, bool no_lease,
                                                  Deadline deadline,
                                                  uint32_t read_pace_ns_per_kib = 0);
  // Per key: 1 exists, 0 not, negative error. The keys are views the caller keeps alive for the
  // call (the Python module's point into its str objects: a batch costs no copy per key).
  Result<rpc::CodesReply> Exists(std::span<const std::string_view> keys, Deadline deadline);
  // Number of leading keys that exist (keys as for Exists).
  Result<uint32_t> ExistsPrefix(std::span<const std::string_view> keys, Deadline deadline);
  // The same for std::string keys (tests, tools).
  Result<rpc::CodesReply> Exists(std::span<const std::string> keys, Deadline deadline) {
    return Exists(std::vector<std::string_view>(keys.begin(), keys.end()), deadline);
  }
  Result<uint32_t> ExistsPrefix(std::span<const std::string> keys, Deadline deadline) {
    return ExistsPrefix(std::vector<std::string_view>(keys.begin(), keys.end()), deadline);
  }
  Result<rpc::CodesReply> Remove(std::span<const std::string> keys, bool force, Deadline deadline);
  // Number of objects removed.
  Result<uint64_t> RemoveAll(bool force, Deadline deadline);
  Result<rpc::StatReply> Stat(Deadline deadline);
  // One page of a key scan (master/master_scan.cc): req.client_id is filled in.
  Result<rpc::ScanKeysReply> ScanKeys(rpc::ScanKeys req, Deadline deadline);

  // Most lease ids kept for sending; beyond it the oldest are dropped (the master ends them at
  // their TTL), so a master out of reach cannot grow the queue without bound.
  static constexpr size_t kMaxQueuedReleases = 8192;
  // Queues the end of read lease `lease_id` (0: nothing). Never blocks on I/O.
  void ReleaseLease(uint64_t lease_id);
  // Sends the queued releases in one LEASE_RELEASE (nothing to send: OK at once).
  Status FlushLeaseReleases(Deadline deadline);
  // Waits until a release has been queued for at least `delay` and is still unsent, or until
  // `until` or StopReleaseWaits(). True when there is something to flush.
  bool WaitForStaleReleases(Clock::duration delay, Deadline until);
  // Wakes every WaitForStaleReleases (shutdown).
  void StopReleaseWaits();
  size_t queued_releases() const;

 private:
  // Whether a request must not reach the master ahead of releases already on their way.
  enum class ReleaseOrder {
    kAny,
    // An upsert or remove is refused while one of the caller's own finished reads still leases
    // the key; if that release left a moment earlier in another request (the flusher's
    // LEASE_RELEASE, on another connection) it could arrive second. Such requests wait (briefly,
    // within their deadline) until every request carrying releases has been answered.
    kAfterReleasesInFlight,
  };
  // Moves the queued releases into `out` (a request's released_leases); true when it moved
  // any, and then the caller must call ReleasesAnswered() once the request is done.
  bool TakeReleases(google::protobuf::RepeatedField<uint64_t>* out, ReleaseOrder order,
                    Deadline deadline);
  // The request that took releases has been answered (or failed).
  void ReleasesAnswered();
  // Puts ids of a request that failed back in the queue.
  void ReturnReleases(const google::protobuf::RepeatedField<uint64_t>& ids);
  // CallFor for a request carrying released_leases: they are returned to the queue on failure.
  template <typename Reply, typename Req>
  Result<Reply> CallReleasing(rpc::Method method, Req& request, Deadline deadline,
                              ReleaseOrder order = ReleaseOrder::kAny);
  template <typename Reply>
  Status Call(rpc::Method method, const google::protobuf::MessageLite& request, Reply* response,
              Deadline deadline);
  // One attempt at `ep`; `sent` tells whether the request may have reached it.
  Status CallAt(const rpc::Endpoint& ep, rpc::Method method,
                const google::protobuf::MessageLite& request,
                google::protobuf::MessageLite* response, Deadline deadline, bool* sent);
  // The leadership epoch of an answer is acceptable (not older than one seen).
  bool Believe(uint64_t epoch);
  template <typename Reply>
  Result<Reply> CallFor(rpc::Method method, const google::protobuf::MessageLite& request,
                        Deadline deadline);
  template <typename Key>  // std::string or std::string_view
  rpc::KeysRequest KeysOf(std::span<const Key> keys) const;
  Result<rpc::PutStartReply> PutStartOnce(std::span<const PutItem> items,
                                          const rpc::ReplicateConfig& config, bool upsert,
                                          Deadline deadline, std::string_view client_host,
                                          uint32_t write_pace_ns_per_kib);

  const rpc::Endpoint master_;                        // without a locator
  const std::shared_ptr<ha::LeaderLocator> locator_;  // null for a fixed address
  const std::string client_id_;
  std::atomic<uint64_t> newest_epoch_{0};  // without a locator: the newest leader_epoch seen
  mutable std::mutex last_mu_;
  rpc::Endpoint last_;  // guarded by last_mu_: with a locator, the master called last
  const std::shared_ptr<rpc::ConnectionPool> pool_;

  mutable std::mutex release_mu_;
  std::condition_variable release_cv_;
  std::vector<uint64_t> releases_;      // guarded by release_mu_
  Clock::time_point oldest_release_{};  // guarded by release_mu_: when releases_ got its first
  bool release_waits_stopped_ = false;  // guarded by release_mu_
  bool release_polling_ = false;        // guarded by release_mu_: the waiter looks by itself
  size_t requests_releasing_ = 0;       // guarded by release_mu_: sent with releases, unanswered
  std::condition_variable releasing_done_cv_;  // requests_releasing_ fell to 0
  // Longest a kAfterReleasesInFlight request waits for them (a master too slow to answer a
  // release in this long is left to order them as they come).
  static constexpr Clock::duration kReleaseOrderWait = std::chrono::milliseconds(500);
  // How long after a release the waiter keeps polling (every `delay`) instead of sleeping.
  static constexpr Clock::duration kReleasePollWindow = std::chrono::milliseconds(200);
};

}  // namespace kvpool::master
