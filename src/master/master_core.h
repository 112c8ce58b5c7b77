// The master's operations, free of any networking: one method per RPC, taking the request
// message and the current time (injected, so tests need no sleeps) and returning the reply.
//
// Objects are immutable once complete; a put is two steps (PutStart reserves space, PutEnd
// commits or revokes) and readers see only complete objects. Per-key results travel in the
// reply (code + message per key); a returned non-OK Status means the whole request was refused.
//
// Threading: every method is thread-safe and none blocks on I/O. PutStart may run an eviction
// round when space is short (bounded work, never a wait for other clients).
//
// Where the methods live: master_core.cc (construction, ping, mount, unmount, Stat),
// master_put.cc (PutStart, PutEnd), master_query.cc (GetReplicaList, Exists, ExistsPrefix,
// Remove, RemoveAll), master_leases.cc, master_restore.cc (journals, re-registration, drain),
// master_tier.cc and master_promote.cc (the disk tier), master_housekeeping.cc, master_scan.cc,
// master_admin.cc; what they share privately is in master_core_internal.h.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/time.h"
#include "kvpool/status.h"
#include "master/client_registry.h"
#include "master/eviction.h"
#include "master/kv_events.h"
#include "master/lease_table.h"
#include "master/master_options.h"
#include "master/object_table.h"
#include "master/segment_registry.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::master {

// What one Housekeeping call did (for logs and tests).
// Admin views (master_admin.cc): read-only snapshots for the HTTP admin endpoints.
struct ObjectListing {
  struct Entry {
    std::string key;
    uint64_t size = 0;
    bool pending = false;
  };
  std::vector<Entry> objects;
  std::string next_cursor;  // empty: the listing is complete
};

struct ObjectInfo {
  struct Replica {
    std::string segment_name;  // empty when the segment was just unmounted
    std::string endpoint;
    uint64_t segment_id = 0;
    uint64_t offset = 0;
  };
  std::string key;
  uint64_t size = 0;
  bool pending = false;
  int64_t lease_remaining_ms = 0;  // complete objects: read lease left (0: none)
  int64_t pending_age_ms = 0;      // pending objects: time since put start
  int64_t idle_ms = 0;             // time since put start or last leased read (eviction's clock)
  bool soft_pinned = false;
  bool hard_pinned = false;
  std::string writer;  // client id of the put's writer, when still alive
  std::vector<Replica> replicas;
};

struct ClientInfo {
  std::string client_id;
  bool known = false;  // pinged or mounted in this master process
  int64_t last_seen_ms_ago = 0;
  std::vector<std::string> segments;  // mounted by this client
};

// Why a put item was refused (NO_AVAILABLE_HANDLE or TENANT_QUOTA_EXCEEDED), for metrics.
enum class RefusalReason : uint8_t {
  kLeasedOrPinned = 0,  // pool full; everything evictable is leased, hard-pinned or pending
  kTenantQuota = 1,
  kNoSegment = 2,       // none mounted, none accepting, or the object is larger than every segment
  kOffloadPending = 3,  // full of objects whose copy to a disk tier is pending (retried)
};
inline constexpr size_t kRefusalReasons = 4;

struct HousekeepingReport {
  size_t dead_clients = 0;
  size_t segments_unmounted = 0;      // segments of dead clients
  size_t objects_dropped = 0;         // left without replicas, or pending puts of dead clients
  size_t reservations_reclaimed = 0;  // pending puts older than put_start_release_timeout
  size_t deferred_frees = 0;          // space of discarded reservations released
  EvictionResult evicted;             // watermark eviction
  size_t leases_expired = 0;          // read leases whose TTL ran out before their release
  size_t leases_of_dead_clients = 0;  // read leases ended because their client was dead
  size_t soft_pins_expired = 0;       // soft pins past their soft_pin_ttl_ms
};

class MasterCore {
 public:
  using TimePoint = Clock::time_point;

  // REQUIRES: ValidateMasterOptions(options).ok(). `epoch` identifies this master process
  // (0: pick a random one).
  explicit MasterCore(const MasterOptions& options, uint64_t epoch = 0);
  MasterCore(const MasterCore&) = delete;
  MasterCore& operator=(const MasterCore&) = delete;

  uint64_t epoch() const { return epoch_; }
  // Where objects stored, removed, evicted and moved between tiers are recorded as KV events
  // (master/kv_events.h); null (the default) records nothing. `events` must outlive the core.
  // REQUIRES: called before the core serves any request.
  void SetKvEvents(KvEventQueue* events) {
    events_ = events;
    evictor_.SetKvEvents(events);
  }
  const MasterOptions& options() const { return options_; }

  // Records the client as alive; client_known is false the first time this process hears a
  // ping or mount from it (the client must then mount its segments again).
  // Errors: INVALID_PARAMS (empty client_id).
  Result<rpc::PingReply> Ping(const rpc::Ping& req, TimePoint now);
  // True when client `client_id` has a segment mounted (its pings keep the segment alive).
  bool HostsSegments(std::string_view client_id) const {
    return registry_.HostsSegments(client_id);
  }
  // Errors: INVALID_PARAMS (empty client_id or name, endpoint not host:port, size below the
  // alignment); SEGMENT_ALREADY_EXISTS (mounted by another client or with another endpoint or
  // size). The same mount repeated by its client is OK and returns the same segment id.
  // `from_host`: the address of the host the mount came from over the network ("" for a
  // loopback or in-process caller). A mount that would replace, as its restart, a segment
  // still mounted from another host is refused (two hosts announce the same address):
  // SEGMENT_ALREADY_EXISTS naming the other client and the flag.
  Result<rpc::MountSegmentReply> MountSegment(const rpc::MountSegment& req, TimePoint now,
                                              std::string_view from_host = {});
  // Unmounts and drops every replica stored there (objects left without one are removed).
  // Errors: INVALID_PARAMS (empty client_id); SEGMENT_NOT_FOUND; ILLEGAL_CLIENT.
  Status UnmountSegment(const rpc::UnmountSegment& req, TimePoint now);

  // Where a journal entry was recorded: a call that answers only once hosts applied its entries
  // (MasterService: a commit held, a replaced or removed object dropped) waits on these with
  // CommitsAcked.
  struct JournalMark {
    uint32_t reply_index;  // the key's code in the reply; for frees, see NoteFree
    uint64_t segment_id;
    uint64_t seq;
  };
  // Adds the free journalled as `seq` in segment `segment_id` (0: none) to `frees`: one mark per
  // segment, its latest free (a host applies its journal in order), each with its own
  // reply_index, so CommitsAcked holds once every segment's host has dropped what was freed.
  static void NoteFree(std::vector<JournalMark>* frees, uint64_t segment_id, uint64_t seq);

  // Reserves space for each item; one result per item. Per item:
  //   OK with replicas: up to replica_num on distinct segments, preferred ones first, then
  //     (on the writer's host first with prefer_alloc_in_same_node) in the order of
  //     options.placement_strategy (best effort: at least one placed). A pending object older than
  //     put_start_discard_timeout is taken over; its old space is freed at its put start +
  //     put_start_release_timeout. With upsert, an unleased complete object's replicas are freed
  //     first (if the new allocation then fails, the key is gone).
  //   OK with already_exists (nothing to write): a complete object, or a pending one younger
  //     than put_start_discard_timeout (another put is writing it).
  //   INVALID_KEY; INVALID_PARAMS (size 0).
  //   With upsert: OBJECT_REPLICA_BUSY (complete and leased), REPLICA_IS_NOT_READY (pending).
  //   NO_AVAILABLE_HANDLE: no segment mounted; larger than every segment (nothing is evicted
  //     for it); or no room because every complete object is leased or hard-pinned (the rest
  //     pending): the message says which, and refused() counts it.
  //   With config.group_ids (one per item): the item's object joins that group (unless it is in
  //   one); with with_soft_pin and soft_pin_ttl_ms, its soft pin lapses that long after put start.
  //   INVALID_PARAMS for an item whose group has ObjectGroups::kMaxMembers members already (and
  //     which is not one of them): nothing is reserved or replaced for it.
  //   TENANT_QUOTA_EXCEEDED: the key's tenant has a quota (options.tenant_quotas) that its
  //     size x replica_num would pass even after evicting the tenant's own least recently used
  //     unleased objects (never another tenant's), or that it exceeds on its own.
  // Request errors: INVALID_PARAMS (empty client_id, replica_num above kMaxReplicas,
  // group_ids neither empty nor one non-empty id per item: nothing is reserved).
  // `frees` (optional) receives where the frees of the objects its upserts replaced were
  // journalled (NoteFree), for CommitsAcked; evictions are not noted.
  Result<rpc::PutStartReply> PutStart(const rpc::PutStart& req, TimePoint now,
                                      std::vector<JournalMark>* frees = nullptr);
  // Codes for commit_keys, then for revoke_keys, in order. A commit records the object's
  // checksum (commit_checksums[i], 0 when absent), which GetReplicaList returns. Commit: OK (also
  // when already complete and written by this client); OBJECT_NOT_FOUND; ILLEGAL_CLIENT (another
  // client's put, e.g. after a takeover); INVALID_KEY. Revoke frees the reservation now: OK;
  // OBJECT_NOT_FOUND; ILLEGAL_CLIENT; INVALID_WRITE (already complete: use Remove); INVALID_KEY.
  // Request errors: INVALID_PARAMS (empty client_id).
  // `marks` (optional) receives where each commit was journalled, for CommitsAcked: a caller
  // that answers the writer only once a host holds the commit (MasterService) waits on them. A
  // key marked recorded_by_host gets none: a host listed it when its bytes were written.
  Result<rpc::CodesReply> PutEnd(const rpc::PutEnd& req, TimePoint now,
                                 std::vector<JournalMark>* marks = nullptr);

  // Per key: OK with size, checksum and replicas, and (unless no_lease) a read lease on it;
  // REPLICA_IS_NOT_READY (pending); OBJECT_NOT_FOUND; REPLICA_IS_GONE (its segments were just
  // unmounted); INVALID_KEY. The lease (reply.lease_id, 0 when no key was leased) covers every
  // OK key and is held by (req.client_id, lease_id): it ends when that client releases it
  // (ReleaseLeases) once its transfer is over, when the client is declared dead (silent for
  // client_ttl; reply.client_handle and client_ttl_ms let the reader check), or at the latest
  // after reply.lease_ttl_ms. While it holds, the objects are neither evicted, upserted nor
  // removed (without force).
  rpc::GetReplicaListReply GetReplicaList(const rpc::KeysRequest& req, TimePoint now);
  // Ends the leases `ids` of client `client_id` (ids it does not hold are ignored; empty
  // client_id: none). Returns how many ended. (master_leases.cc)
  size_t ReleaseLeases(std::string_view client_id, std::span<const uint64_t> ids, TimePoint now);
  // The LEASE_RELEASE RPC. Errors: INVALID_PARAMS (empty client_id).
  Status LeaseRelease(const rpc::LeaseRelease& req, TimePoint now);
  // Read leases held now and the bytes of the objects they hold.
  uint64_t leases_held() const { return leases_.held(); }
  uint64_t bytes_leased() const { return leases_.bytes(); }
  // Put items refused since start for `reason`.
  uint64_t refused(RefusalReason reason) const {
    return refused_[static_cast<size_t>(reason)].load(std::memory_order_relaxed);
  }
  // Per key: 1 complete, 0 absent or pending, INVALID_KEY.
  rpc::CodesReply Exists(std::span<const std::string_view> keys, TimePoint now);
  rpc::CodesReply Exists(const rpc::KeysRequest& req, TimePoint now);
  // Number of leading keys that are complete (stops at the first miss or invalid key).
  rpc::ExistsPrefixReply ExistsPrefix(const rpc::KeysRequest& req, TimePoint now);
  // Per key: OK; OBJECT_HAS_LEASE (leased and not force); REPLICA_IS_NOT_READY (pending, even
  // with force); OBJECT_NOT_FOUND; INVALID_KEY.
  // `frees` (optional): as PutStart's, for the removed objects (a forced remove of a leased
  // object frees it when its leases end: not noted).
  rpc::CodesReply Remove(const rpc::KeysRequest& req, TimePoint now,
                         std::vector<JournalMark>* frees = nullptr);
  // Removes every complete object of `tenant` (leased ones only with force; pending ones never;
  // "" is the default tenant: keys without a tenant prefix, common/tenant_key.h). `frees` as
  // Remove's.
  rpc::RemoveAllReply RemoveAll(const rpc::RemoveAll& req, TimePoint now,
                                std::string_view tenant = {},
                                std::vector<JournalMark>* frees = nullptr);
  rpc::StatReply Stat() const;
  // One page of a scan over `tenant`'s keys starting with req.prefix() (master_scan.cc;
  // remove_by_regex, list_keys): one ListObjects page of the tenant's namespace (the same
  // bounded work per request and the same short shard-lock holds), complete objects only, as
  // user keys. Errors: INVALID_PARAMS (a prefix longer than a key, a limit above
  // kMaxListLimit, a cursor this master did not make).
  Result<rpc::ScanKeysReply> ScanKeys(const rpc::ScanKeys& req, std::string_view tenant);

  // ---- Disk tiers (master_tier.cc) ----
  // TIER_UPDATE from the host of a disk segment: adds the replicas it copied to disk to their
  // objects and drops those it evicted; codes per rpc::TierUpdate (kvpool.proto).
  // Request errors: INVALID_PARAMS (empty client_id); SEGMENT_NOT_FOUND; ILLEGAL_CLIENT (not a
  // disk segment of that client).
  Result<rpc::CodesReply> TierUpdate(const rpc::TierUpdate& req, TimePoint now);
  // Evicted objects that stayed on a disk tier, since start.
  uint64_t demoted_total() const { return evictor_.demoted_total(); }
  // PROMOTE from a segment host (master_promote.cc): reserves ranges of its own DRAM segment
  // for objects it serves from its disk tier, and lists them as DRAM replicas once filled;
  // codes per rpc::Promote (kvpool.proto). Request errors: INVALID_PARAMS (empty client_id);
  // SEGMENT_NOT_FOUND; ILLEGAL_CLIENT (not a DRAM segment of that client).
  Result<rpc::PromoteReply> Promote(const rpc::Promote& req, TimePoint now);
  // Disk-tier objects given a DRAM replica again, since start.
  uint64_t promoted_total() const { return promoted_total_.load(std::memory_order_relaxed); }

  // ---- Admin views (master_admin.cc) ----
  // Most keys one ListObjects page returns.
  static constexpr size_t kMaxListLimit = 10000;
  // Objects one ListObjects page scans before it stops at a shard boundary.
  static constexpr size_t kListScanBudget = 1 << 18;
  // Index slots ListObjects scans per shard lock hold (25/64..7/8 of them hold objects).
  static constexpr size_t kListSlotsPerLock = 2048;
  // Keys starting with `prefix`, at most `limit`, from after `cursor` ("" starts; then the
  // previous page's next_cursor). The order (by shard, then by key bytes) is stable, so paging
  // never repeats a key and visits every key that exists throughout. A shard is scanned in
  // pieces of kListSlotsPerLock index slots, each under its own short lock hold (puts and
  // gets of that shard wait for one piece at most, not for the whole scan); a page stops early
  // once it has scanned about kListScanBudget objects, so a page may hold fewer than `limit`
  // keys and still have a next_cursor.
  // Errors: INVALID_PARAMS (limit 0 or above kMaxListLimit; a cursor this master did not make).
  Result<ObjectListing> ListObjects(std::string_view prefix, size_t limit, std::string_view cursor);
  // Errors: INVALID_KEY; OBJECT_NOT_FOUND.
  Result<ObjectInfo> InspectObject(std::string_view key, TimePoint now);
  // The clients heard from within client_ttl, by client id.
  std::vector<ClientInfo> ListClients(TimePoint now) const;
  // Objects whose put started and has not ended (locks each shard in turn).
  size_t PendingObjects();
  // Replica bytes freed by eviction since start.
  uint64_t evicted_bytes_total() const { return evictor_.evicted_bytes_total(); }
  // Replica bytes and objects per tenant (common/tenant_key.h), for metrics and admin views.
  std::map<std::string, TenantUsage, std::less<>> TenantUsages() const {
    return table_.tenants().Snapshot();
  }

  // ---- Segment journals, re-registration and drain (master_restore.cc) ----
  // Most journal entries one ping reply carries per segment.
  static constexpr size_t kJournalBatch = 8192;
  // True when a segment acked in `req` has journal entries to hand out, or is not mounted by
  // the pinging client (the long-polling ping answers as soon as this holds).
  bool JournalReady(const rpc::Ping& req) const;
  // Notified whenever a segment's journal grows (wakes long-polling pings).
  JournalSignal& journal_signal() { return registry_.journal_signal(); }
  // Records the journal acknowledgements a ping carries, before the ping waits for news (so a
  // put waiting in CommitsAcked learns of them at once). Only a privileged caller's.
  void AckJournals(const rpc::Ping& req);
  // Fills `unacked` with the reply indices of `marks` (sorted by reply_index) none of whose
  // segments' hosts holds the commit yet (SegmentRegistry::CommitAcked); true when none.
  bool CommitsAcked(std::span<const JournalMark> marks, std::vector<uint32_t>* unacked) const;
  // Notified whenever a host acknowledges journal entries (wakes puts waiting on CommitsAcked).
  JournalSignal& ack_signal() { return registry_.ack_signal(); }
  // Marks a segment as draining (no new replicas; `draining` false undoes it). A non-empty
  // `client_id` must own the segment (a host draining itself; the admin endpoint passes none).
  // Errors: SEGMENT_NOT_FOUND; ILLEGAL_CLIENT.
  Status SetDraining(std::string_view segment_name, bool draining, std::string_view client_id = {});
  // The DRAIN_SEGMENT RPC. Errors: INVALID_PARAMS (empty client_id); as SetDraining.
  Status DrainSegment(const rpc::DrainSegment& req, TimePoint now);

  // Expires clients silent for client_ttl (unmounting their segments, dropping the replicas
  // there and revoking their pending puts), reclaims pending puts older than
  // put_start_release_timeout, performs due deferred frees and runs watermark eviction.
  // Call about every 100 ms. Calls are serialised.
  HousekeepingReport Housekeeping(TimePoint now);

 private:
  struct PutContext;
  // Evictions one put item may run before it is refused. Each must free something, and each
  // targets twice the bytes of the one before: freed bytes scattered between newer objects may
  // leave no hole the put fits in, and doubling finds one in a few passes (40 passes cover any
  // pool) while evicting at most about twice what a contiguous hole would have needed.
  static constexpr int kPutEvictionAttempts = 40;
  void Refuse(RefusalReason reason) {
    refused_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  }
  // Undoes the holds of ended leases (master_leases.cc); returns how many leases.
  size_t EndLeases(std::vector<Lease> ended);
  // The quota of `tenant` (--tenant_quota), if it has one.
  std::optional<uint64_t> QuotaOf(std::string_view tenant) const;
  // Bytes by which `need` more would take `tenant` past `quota` (0: it fits).
  uint64_t QuotaExcess(std::string_view tenant, uint64_t need, uint64_t quota) const;
  // TENANT_QUOTA_EXCEEDED for `item`: above the `whole` quota, or nothing left to evict.
  void SetQuotaExceeded(const rpc::PutItem& item, std::string_view tenant, uint64_t quota,
                        bool whole, rpc::PutStartResult* out) const;
  // What the puts of one PUT_START learnt of eviction: once one found nothing to free, the rest
  // do not try again; whether room is held by objects waiting for a disk tier.
  struct BatchEviction {
    bool may_evict = true;
    bool offload_pending = false;
  };
  rpc::PutStartResult PutOne(const rpc::PutItem& item, const PutContext& ctx,
                             BatchEviction* eviction, std::string_view group_id);
  // INVALID_PARAMS unless config.group_ids is empty or one non-empty id (<= 4 KiB) per item.
  static Status ValidateGroupIds(const rpc::PutStart& req);
  // Under the key's shard lock: the object of `key` joins `group` (ObjectGroups::Scoped)
  // unless it is in a group already.
  void JoinGroup(ObjectTable::Shard& shard, std::string_view key, const std::string& group);
  // Under the key's shard lock: whether `group` has ObjectGroups::kMaxMembers members and
  // `key` is not one of them.
  bool GroupIsFullFor(ObjectTable::Shard& shard, std::string_view key, const std::string& group);
  // Longest soft pin TTL honoured (a day); longer ones are cut to it.
  static constexpr uint64_t kMaxSoftPinTtlMs = 86'400'000;
  // GetReplicaList: holds the group peers of the batch's grouped objects under `lease` too, so a
  // lease on one member protects its whole group (master_leases.cc).
  void HoldGroupPeers(const std::vector<std::string_view>& grouped, const rpc::KeysRequest& req,
                      Lease* lease);
  // Under the key's shard lock: true when `out` is already the answer for this put; false when
  // the key is (now) free to be put.
  struct Carried;
  bool ResolveExisting(ObjectTable::Shard& shard, Object* obj, const PutContext& ctx,
                       rpc::PutStartResult* out, Carried* carried);
  bool TryPlace(ObjectTable::Shard& shard, const rpc::PutItem& item, const PutContext& ctx,
                const Carried& carried, rpc::PutStartResult* out);
  // Appends the journal entries of a commit to `marks` (when given) as reply `index`'s.
  ErrorCode Commit(std::string_view key, uint32_t writer, uint64_t checksum, int64_t now_ns,
                   std::string* msg, uint32_t index, std::vector<JournalMark>* marks);
  ErrorCode Revoke(std::string_view key, uint32_t writer, int64_t now_ns, std::string* msg);
  // Under the key's shard lock: the object `writer` is putting under `key`, or null with
  // OBJECT_NOT_FOUND (`missing` ends that message) or ILLEGAL_CLIENT (another writer's).
  Object* WritersObject(ObjectTable::Shard& shard, std::string_view key, uint32_t writer,
                        std::string_view missing, ErrorCode* code, std::string* msg);
  ErrorCode RemoveOne(std::string_view key, bool force, int64_t now_ns, std::string* msg,
                      std::vector<JournalMark>* frees);
  // Frees every replica now; notes the frees in `frees` when given (NoteFree).
  void FreeReplicas(const Object& o, std::vector<JournalMark>* frees = nullptr);
  // KV events: `o` leaves every medium it is on.
  void RecordRemovedObject(const Object& o, KvRemoval why) {
    RecordRemoved(events_, o.key(), HasTier(o.replicas(), kTierDram),
                  HasTier(o.replicas(), kTierDisk), why);
  }
  // The space of a put that did not complete (revoked, or its writer declared dead): bytes the
  // writer sent may still be on their way (a TCP retransmission after a partition heals, a
  // packet held in a queue), so it is handed out again only at put start +
  // put_start_release_timeout, as a discarded reservation's. Never to the next put at once.
  void FreeUnfinishedPut(const Object& o, int64_t now_ns);
  // FreeReplicas, deferred to the end of the object's read leases while it has any (a forced
  // remove): no reader still copying its bytes finds another object's bytes there.
  void FreeReplicasAfterReaders(const Object& o, int64_t now_ns,
                                std::vector<JournalMark>* frees = nullptr);
  // A mount from `from_host` that would replace a segment as its host's restart (same name and
  // endpoint, new client and incarnation) while that segment was mounted from another host and
  // is still mounted (its owner not yet expired after --client_ttl): two hosts announce the same
  // address. SEGMENT_ALREADY_EXISTS naming both and the flag; else OK (a restart comes from the
  // same host).
  Status CheckNotServedByAnother(const rpc::MountSegment& req, TimePoint now,
                                 std::string_view from_host) const;
  // Ping: acknowledges the journals `req` names and adds what is left of them to `reply`.
  void AddJournals(const rpc::Ping& req, rpc::PingReply* reply);
  // Mount with an object list: stages the chunk, and on the last one rebuilds the objects and
  // opens the segment to new replicas. Returns the objects restored.
  size_t StageOrRestore(const rpc::MountSegment& req, uint64_t segment_id, int64_t now_ns);
  size_t RestoreObjects(uint64_t segment_id, std::vector<rpc::StoredObject> objects,
                        int64_t now_ns);
  // Under the key's shard lock: one TierUpdate item (master_tier.cc).
  ErrorCode AddDiskReplica(ObjectTable::Shard& shard, const rpc::StoredObject& so,
                           uint64_t segment_id);
  ErrorCode DropDiskReplica(ObjectTable::Shard& shard, const rpc::StoredObject& so,
                            uint64_t segment_id, int64_t now_ns);
  // One item of a Promote (master_promote.cc); Start fills *offset on OK.
  ErrorCode PromoteStart(const rpc::StoredObject& so, uint64_t segment_id, int64_t now_ns,
                         uint64_t* offset);
  ErrorCode PromoteCommit(const rpc::StoredObject& so, uint64_t segment_id);
  // Frees reserved promotion ranges older than kPromotionTimeout; returns how many.
  size_t ExpirePromotions(int64_t now_ns);
  // Under the key's shard lock: adopts one restored replica; false when it must be freed.
  bool AdoptRestored(ObjectTable::Shard& shard, const rpc::StoredObject& so, const ReplicaRef& ref,
                     int64_t now_ns);
  // Drops replicas on `segments` and revokes pending puts of `writers` (their space as
  // FreeUnfinishedPut's), in one pass over the table. Returns the objects removed.
  size_t DropReplicasAndWriters(const std::vector<uint64_t>& segments,
                                const std::vector<uint32_t>& writers, int64_t now_ns);
  size_t ExpireClients(TimePoint now, HousekeepingReport* report);
  size_t ReclaimStaleReservations(int64_t now_ns);
  EvictionResult WatermarkEviction(int64_t now_ns);
  // ListObjects' pass over shard `index`: adds up to `limit` - listing->objects.size() keys
  // after `after` (all when `after` is empty), in key order. Returns objects scanned.
  size_t ListShard(size_t index, std::string_view prefix, size_t limit, std::string_view after,
                   ObjectListing* listing);
  // One attempt at it in pieces; false (nothing added) when the shard rehashed in between.
  bool ListShardInPieces(size_t index, std::string_view prefix, size_t want, std::string_view after,
                         std::vector<ObjectListing::Entry>* best, size_t* scanned);

  const MasterOptions options_;
  const uint64_t epoch_;
  const int64_t lease_ns_, discard_ns_, release_ns_;
  const PlacementStrategy strategy_;
  ClientRegistry clients_;
  SegmentRegistry registry_;
  ObjectTable table_;
  Evictor evictor_;
  LeaseTable leases_;
  std::array<std::atomic<uint64_t>, kRefusalReasons> refused_{};
  KvEventQueue* events_ = nullptr;  // set before serving, then read-only
  std::mutex restore_mu_;
  // Object lists of segments whose re-registration is still arriving, by segment name.
  struct StagedRestore {
    uint64_t segment_id = 0;  // a new mount of the name (new id) discards an unfinished one
    std::vector<rpc::StoredObject> objects;
  };
  std::unordered_map<std::string, StagedRestore> staged_restores_;  // guarded by restore_mu_
  // DRAM ranges reserved by PROMOTE start and not yet committed, by (segment id, offset).
  struct ReservedPromotion {
    std::string key;
    ReplicaRef ref;
    uint64_t size = 0;
    int64_t reserved_ns = 0;
  };
  static constexpr int64_t kPromotionTimeoutNs = 30'000'000'000;
  std::mutex promotions_mu_;
  std::map<std::pair<uint64_t, uint64_t>, ReservedPromotion> promotions_;  // guarded by it
  std::atomic<uint64_t> promoted_total_{0};
  std::mutex housekeeping_mu_;              // serialises Housekeeping
  int64_t watermark_backoff_until_ns_ = 0;  // guarded by housekeeping_mu_
};

// Steady-clock nanoseconds, the unit Object stores.
inline int64_t ToNanos(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace kvpool::master
