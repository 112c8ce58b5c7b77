// kvpool's C++ client: the library an inference process links to put and get KV pages.
//
// Modes. Embedded (Setup with global_segment_size > 0): the process also contributes that much
// of its own DRAM to the pool and serves it to peers over TCP; keys placed there are read and
// written by memcpy when this process asks, over TCP when others do. With
// global_segment_size = 0 the process only uses segments of storage nodes (`kvpool node`).
// Standalone (SetupStandalone): the process attaches to a `kvpool node` on its host, which does
// the transfers into and out of the caller's HostMemAllocator pages (see StandaloneOptions).
//
// Zero copy. put_from / get_into move bytes straight between the caller's memory and the
// segment (no staging buffer). The memory must lie inside a region registered with
// RegisterBuffer; a pointer outside every registered region is refused (INVALID_PARAMS) before
// any byte moves.
//
// Batches. A batch call costs one control round trip to the master per phase (put: start, end;
// get: one) and one data request per storage node involved; it returns one result per key, and
// the failure of one key never fails or corrupts the others. A batch larger than 8,192 keys or
// 8 MiB of keys (common/key_chunks.h) is sent as several requests per phase, in order, so that no
// frame exceeds the 64 MiB limit; its keys still get one result each.
//
// Deadlines. Every call finishes by its deadline: control calls within
// ClientOptions::rpc_timeout, the data phase of a batch within transfer_timeout. A dead master
// or node turns into RPC_FAIL / RPC_TIMEOUT / TRANSFER_FAIL, never a hang.
//
// Threading. A Client is thread-safe: any number of threads may call it at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvpool/batch.h"
#include "kvpool/status.h"

namespace kvpool {

struct ClientOptions {
  // Master to register with, "host:port" (default port 50051), or "etcd://h1:2379;h2:2379[/id]":
  // ask etcd which master of cluster `id` (default "kvpool") leads, and follow the leader when
  // it changes (docs/operations.md, "Three masters"). A malformed address fails Setup with
  // INVALID_PARAMS naming it.
  std::string master_server_address = "127.0.0.1:50051";
  // Host name or IP under which peers reach this process's segment (embedded mode). With
  // global_segment_size > 0 it must resolve: Setup fails with INVALID_PARAMS naming the host.
  // Empty, or a loopback name or address ("localhost", Mooncake's default) while the master is
  // on another host: Setup announces this host's address on the route to the master instead
  // (a loopback address is unreachable from every other host), and logs it. The segment's data
  // port listens on that address when it is an IP, else on every address.
  std::string local_hostname = "127.0.0.1";
  // Bytes of this process's DRAM contributed to the pool; 0 contributes nothing.
  uint64_t global_segment_size = 0;
  // Data port for the contributed segment; 0 picks a free port in 12300-14300 (Mooncake's
  // transfer engine range, so firewall rules written for it hold), any free port when all of
  // those are taken.
  uint16_t segment_port = 0;
  // Back the contributed segment with huge pages (must be reserved by the operator).
  bool use_hugepage = false;
  // A disk tier below the contributed segment (docs/operations.md, "Disk tier"): a directory
  // (it must exist and be writable) and the bytes of its one preallocated file. Objects put
  // into the segment are copied there in the background and stay readable from disk after the
  // DRAM copy is evicted, and after a restart of this process. Empty / 0: no disk tier. Setup
  // fails with FILE_NOT_FOUND / FILE_OPEN_FAIL / NO_AVAILABLE_HANDLE naming the path and the
  // need. Requires global_segment_size > 0 (INVALID_PARAMS otherwise).
  std::string disk_path;
  uint64_t disk_size = 0;
  // io_uring operations in flight per disk ring.
  uint32_t disk_queue_depth = 32;
  // Reads from the disk tier after which an object is copied back into the DRAM segment in the
  // background (0: never promote).
  uint32_t disk_promote_after = 2;
  // "tcp" (the only transport today; "rdma" is refused with NOT_SUPPORTED).
  std::string protocol = "tcp";
  // Deadline of one control call to the master.
  std::chrono::milliseconds rpc_timeout{5000};
  // Deadline of the data phase of one call (all of a batch's transfers together).
  std::chrono::milliseconds transfer_timeout{30000};
  // A segment host whose data connection makes no progress this long (a partition, a hung
  // host) is given up on for a read that has another replica to try, and its replicas are read
  // last for 5x this long (docs/failure-model.md, "A silent node"). Writes, which have nowhere
  // else to go, give up after 3x this long without progress. 100 ms .. 1 h.
  std::chrono::milliseconds silent_peer_timeout{1000};
  // Liveness ping period; the master drops a client silent for its --client_ttl.
  std::chrono::milliseconds heartbeat_interval{1000};
  // Microseconds a call to the master or a node polls for its reply before the thread sleeps
  // (yielding the CPU to any other runnable thread between looks). On a VM, waking a CPU that
  // went idle costs tens of microseconds, most of a small call's round trip: this halves the
  // latency of exists and other metadata calls there. 0: sleep at once (no polling); at most
  // 10000 through the option table (setup dict, config file).
  uint16_t reply_spin_us = 100;
  // A put's payload sends of at least this many bytes go zero-copy (MSG_ZEROCOPY) on plain TCP:
  // the kernel sends from the caller's pages instead of copying them. Where it cannot (loopback,
  // veth, a NIC without scatter-gather) it says so and the connection stops asking
  // (docs/benchmarks.md, "Zero-copy sends"). 0: never.
  uint64_t zero_copy_send_min_bytes = 64 * 1024;
  // Fault the contributed segment's memory in at Setup, on one thread per core (at most 8), before
  // Setup mounts it (0.4 s per GiB on a 2-vCPU VM, 2-9 s where its host never backed the memory),
  // instead of on the first put into each page, whose page faults otherwise cost as much as the
  // copy itself.
  bool prefault_segment = false;
  // Without prefault_segment: fault the contributed segment in on a thread of its own after
  // Setup returns (madvise MADV_POPULATE_WRITE, which keeps what puts write meanwhile), so Setup
  // is not delayed and the first pass of puts runs at steady-state speed. The segment is then
  // resident from the start, as it would be once full. false: pages fault in on first write.
  bool prefault_segment_in_background = true;
  // Gets recompute each object's XXH3-64 over the bytes received and compare it with the one
  // its writer recorded at put end. A mismatch is reported as CHECKSUM_MISMATCH for that key
  // (after trying its other replicas); its buffer then holds no valid data. Off by default:
  // it costs one pass over the bytes (~10+ GB/s per core). Puts always record the checksum.
  bool verify_checksum = false;

  // Security (docs/security.md). The shared secret this client proves to the master and nodes
  // (and, embedded, requires from peers reading its segment). Empty: read from
  // auth_secret_file; if that is empty too, from $KVPOOL_AUTH_SECRET; else none. Setup fails
  // with FILE_NOT_FOUND when the file cannot be read.
  std::string auth_secret;
  std::string auth_secret_file;
  // TLS. A CA bundle (PEM) that verifies the master and nodes: setting it turns TLS on for every
  // connection this client makes. Optional certificate and key (PEM) presented to servers that
  // require client certificates; an embedded client that contributes memory also serves its
  // segment with them (and must then set tls_ca_file). Setup fails with INVALID_PARAMS or
  // FILE_NOT_FOUND naming a file that cannot be loaded.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  // Embedded segment: require a client certificate signed by tls_ca_file from peers.
  bool tls_verify_client = false;
  // Embedded segment without a secret: false (the default) serves it in protected mode, to
  // processes of this host only (peers on other hosts get ILLEGAL_CLIENT naming the fix); true
  // serves unauthenticated peers from anywhere, like `kvpool node --insecure`.
  bool insecure = false;

  // Tenants (docs/security.md, "Tenants"). The tenant whose key namespace this client uses:
  // "" or "default" is the default tenant; another tenant's objects can be neither read,
  // listed, removed nor probed. At most 128 bytes, no NUL (else Setup fails with
  // INVALID_PARAMS).
  std::string tenant_id;
  // The tenant key of tenant_id (`kvpool tenant-key --tenant ID`), proven instead of the pool
  // secret: the master then confines this client to tenant_id (a key made for another tenant
  // fails Setup with ILLEGAL_CLIENT). Empty: read from tenant_key_file, else from the file
  // named by $KVPOOL_TENANT_KEY_FILE, else from $KVPOOL_TENANT_KEY; with none of them the pool
  // secret (auth_secret above) is used, if any. A client with a tenant key contributes no
  // memory (global_segment_size must be 0: INVALID_PARAMS otherwise). Setup fails with
  // FILE_NOT_FOUND when the file cannot be read.
  std::string tenant_key;
  std::string tenant_key_file;
};

// Standalone mode: the process attaches to a `kvpool node` on the same host instead of talking
// to the pool itself. The node moves the bytes: straight between its segment (or a peer's, over
// TCP) and the caller's pages, which must come from kvpool's HostMemAllocator
// (kvpool/host_allocator.h) so the node can map them. Only keys, region ids, offsets and sizes
// cross the local socket. The engine can restart without losing the pool, and several engine
// processes share one node.
struct StandaloneOptions {
  // The local node: "host:port" with the port given to `kvpool node --port` (required: there
  // is no default for a missing port). The node is reached through the Unix socket
  // "@kvpool_node_<port>.sock", so the host must be an address of this machine (127.0.0.1,
  // localhost, this host's name or one of its IPs); SetupStandalone refuses any other host, an
  // unresolvable one, a missing or bad port and "" with INVALID_PARAMS naming the address.
  // "@name" or "/path" names a socket directly (the node's --local_socket_path, e.g. across
  // network namespaces).
  std::string server_address = "127.0.0.1:50052";
  // Bytes of host memory the engine intends to register (informational: logged by the node).
  uint64_t mem_pool_size = 0;
  // The staging buffer shared with the node for the copying calls (BatchPut/BatchGet, and
  // zero-copy fallbacks of callers whose memory is not from HostMemAllocator). 0: 64 MiB.
  uint64_t local_buffer_size = 0;
  // Deadline of one control exchange with the node (attach, register, metadata calls).
  std::chrono::milliseconds rpc_timeout{5000};
  // Deadline of the data phase of one batch (the node's transfers).
  std::chrono::milliseconds transfer_timeout{30000};
  // Liveness ping period to the node; the node drops a client silent for 10 s.
  std::chrono::milliseconds heartbeat_interval{1000};
  // As ClientOptions::verify_checksum; the node does the check. Off by default.
  bool verify_checksum = false;
};

// Most replicas one object may have: a put asking for more is refused with INVALID_PARAMS
// (the master's limit; Python's ReplicateConfig refuses more with ValueError).
inline constexpr size_t kMaxReplicaNum = 16;

// How to place the replicas of objects being put.
struct ReplicateConfig {
  size_t replica_num = 1;      // 1..kMaxReplicaNum replicas on distinct segments, best effort
  bool with_soft_pin = false;  // evicted last
  bool with_hard_pin = false;  // never evicted
  std::vector<std::string> preferred_segments;  // segment names ("host:port") tried first
  bool prefer_alloc_in_same_node = false;
  // One per key of the batch, or empty: objects sharing a group id are evicted together and a
  // read lease on one holds them all (a hybrid model's page: its KV and state objects). Wrong
  // length or an empty id: INVALID_PARAMS for the whole batch, nothing written.
  std::vector<std::string> group_ids;
  uint64_t soft_pin_ttl_ms = 0;  // with_soft_pin: the pin lapses this long after the put (0: never)
  // Upsert of an existing object: the new object keeps the replaced one's soft pin (and its
  // expiry) instead of taking with_soft_pin (Mooncake's SoftPinAction.PRESERVE). A hard pin
  // always carries over: an upsert cannot clear it.
  bool keep_soft_pin_on_upsert = false;
};

// Totals of the pool as the master sees them.
struct PoolSegmentStat {
  std::string name;
  std::string endpoint;
  uint64_t size = 0;
  uint64_t used = 0;
  uint64_t object_count = 0;
  uint32_t tier = 0;  // 0 DRAM, 1 a node's disk tier (docs/operations.md, "Disk tier")
};
struct PoolStat {
  std::vector<PoolSegmentStat> segments;
  uint64_t capacity = 0;
  uint64_t used = 0;
  uint64_t object_count = 0;
  uint64_t client_count = 0;
  uint64_t evicted_total = 0;
  // Read leases held now (transfers in flight) and the bytes of the objects they hold.
  uint64_t leases_held = 0;
  uint64_t bytes_leased = 0;
  // Put items refused for lack of room since the master started, by reason: the pool was full
  // with everything evictable leased, hard-pinned or being written; a tenant quota; no segment
  // (none mounted or accepting, or the object is larger than every segment); DRAM full of
  // objects still waiting for their disk copy (the client puts those again: one count per try).
  uint64_t refused_leased_or_pinned = 0;
  uint64_t refused_tenant_quota = 0;
  uint64_t refused_no_segment = 0;
  uint64_t refused_offload_pending = 0;
  // Master high availability: the role of the master that answered ("leader"; "single" or ""
  // without HA), its leadership epoch and published address (empty without HA).
  std::string ha_role;
  uint64_t leader_epoch = 0;
  std::string leader_address;
  // Disk tiers, apart (capacity and used above count DRAM only): bytes and replicas there.
  uint64_t disk_capacity = 0;
  uint64_t disk_used = 0;
  uint64_t disk_replicas = 0;
};

// The public calls are written once, here and in src/client/client.cc: each builds one
// ObjectBatch (kvpool/batch.h), validates it once and hands it to the few operations that differ
// between the embedded and the standalone client (the private virtual functions at the end).
class Client {
 public:
  // Connects to the master, and in embedded mode maps and mounts the segment and starts serving
  // it. The caller owns the returned client; destroying it Close()s.
  // Errors: INVALID_PARAMS (bad address, protocol), NOT_SUPPORTED ("rdma"), RPC_FAIL /
  // RPC_TIMEOUT (master unreachable), NO_AVAILABLE_HANDLE (segment memory could not be mapped);
  // with an etcd:// address also ETCD_OPERATION_ERROR (etcd unreachable) and NOT_LEADER (no
  // master leads), each after retrying for rpc_timeout.
  static Result<std::unique_ptr<Client>> Setup(const ClientOptions& options);

  // Attaches to the local node at options.server_address (standalone mode; see
  // StandaloneOptions) and allocates the staging buffer. The returned client implements every
  // call below, with these differences:
  //  - RegisterBuffer(ptr, size) accepts any range inside ONE HostMemAllocator allocation
  //    (whole or part, e.g. the K and V halves of one pool registered separately; the same or
  //    an overlapping range again is harmless) and refuses any other memory with
  //    UNAVAILABLE_IN_CURRENT_MODE, whose message says what was wrong and the ways out
  //    (allocate with HostMemAllocator, turn standalone mode off, or use the copying calls).
  //  - BatchPut / BatchGet copy through the staging buffer (one extra copy; values larger than
  //    the buffer go through a temporary shared allocation).
  //  - Control and data calls fail with RPC_FAIL / RPC_TIMEOUT within their deadline while the
  //    node is unreachable; the client re-attaches (re-registering its buffers) as soon as the
  //    node is back. HealthCheck: 2 while the node (or its master) is unreachable.
  //  - SegmentName() is the node's segment.
  //  - A batch costs one request to the node and, there, one control round trip to the master
  //    per phase, as in embedded mode; the node checks each slice against the memory this
  //    client registered (INVALID_PARAMS otherwise) and moves the bytes itself.
  //  - IsExist / BatchIsExist / ExistsPrefix: one round trip to the master itself when the
  //    node named it at attach (it does so when the pool asks no credential: no secret, no
  //    TLS), else relayed by the node. Results and errors are the same either way; while the
  //    node is down they fail like every other call (RPC_FAIL), and a master the client cannot
  //    reach (RPC_FAIL) is asked through the node instead.
  // Errors: INVALID_PARAMS (bad address, zero timeouts), RPC_FAIL / RPC_TIMEOUT (no node
  // listening: the message names the socket), NO_AVAILABLE_HANDLE (staging buffer).
  static Result<std::unique_ptr<Client>> SetupStandalone(const StandaloneOptions& options);

  virtual ~Client() = default;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Every call below made after Close() fails with UNAVAILABLE_IN_CURRENT_STATUS (HealthCheck
  // answers 1, SegmentName "").

  // Registers [ptr, ptr+size) for zero-copy calls. Registering the same or an overlapping range
  // again is harmless. The memory stays owned by the caller and must stay valid until
  // UnregisterBuffer or Close. Errors: INVALID_PARAMS (null pointer, size 0); standalone mode:
  // UNAVAILABLE_IN_CURRENT_MODE (not inside one HostMemAllocator allocation), RPC_FAIL /
  // RPC_TIMEOUT (node unreachable; nothing was registered).
  Status RegisterBuffer(void* ptr, size_t size);
  // Forgets the region that starts at `ptr`. Registrations are not reference-counted: one
  // call forgets the start address however often it was registered (with the largest size
  // given). It does not wait for calls in flight: a put or get that another thread started on
  // that memory before keeps using it until it returns, so free or reuse the memory only after
  // those calls returned (new calls on it fail with INVALID_PARAMS at once).
  // Errors: INVALID_PARAMS (not registered).
  Status UnregisterBuffer(void* ptr);

  // ---- The batch form: every put and get below comes down to these two. ----
  // Stores object i of `batch` (the concatenation of its buffers) under its key; one result per
  // object, in order; one object's failure never fails or corrupts another's. `upsert` false:
  // objects are immutable, an existing key is left as it is and reported OK. true: replaces an
  // existing object (OBJECT_REPLICA_BUSY while a reader holds it).
  // REQUIRES: every buffer lies in a registered region.
  // Every put call blocks while the pool is full of objects still being copied to their
  // node's disk tier (evicting them would lose them), asking the master again for at most
  // rpc_timeout: puts then run at the disk's speed.
  // Errors, per object: INVALID_KEY (empty, > 4 KiB), INVALID_PARAMS (0 bytes, unregistered
  // memory), NO_AVAILABLE_HANDLE (pool full, nothing evictable; or still full of objects waiting
  // for a disk tier after rpc_timeout), TRANSFER_FAIL, RPC_FAIL, RPC_TIMEOUT; for every object:
  // INVALID_PARAMS (replica_num 0, group_ids of the wrong length or with an empty id).
  std::vector<Status> Put(const ObjectBatch& batch, const ReplicateConfig& config = {},
                          bool upsert = false);
  // Reads object i into its buffers (it must fill them exactly or fit in them); one result per
  // object, its size. On any error the destination is not written past what the error says
  // (BUFFER_OVERFLOW: untouched).
  // Errors, per object: INVALID_KEY, OBJECT_NOT_FOUND, REPLICA_IS_NOT_READY (still being
  // written), BUFFER_OVERFLOW (the buffers are smaller than the object), INVALID_PARAMS
  // (unregistered memory, no buffer), LEASE_EXPIRED (the transfer outlived its lease; the bytes
  // may be stale), CHECKSUM_MISMATCH (verify_checksum on: no replica's bytes matched the
  // recorded checksum; the destination holds no valid data), TRANSFER_FAIL, RPC_FAIL,
  // RPC_TIMEOUT. A replica whose transfer fails is retried from the object's next replica.
  std::vector<Result<uint64_t>> Get(const ObjectBatch& batch);

  // ---- The vector forms, each one Put or Get. ----
  // A vector length mismatch fails every key with INVALID_PARAMS; an object whose buffer and
  // size lists differ in length fails alone.
  Status PutFrom(const std::string& key, const void* ptr, size_t size,
                 const ReplicateConfig& config = {});
  Result<uint64_t> GetInto(const std::string& key, void* ptr, size_t size);
  std::vector<Status> BatchPutFrom(const std::vector<std::string>& keys,
                                   const std::vector<const void*>& ptrs,
                                   const std::vector<size_t>& sizes,
                                   const ReplicateConfig& config = {});
  std::vector<Result<uint64_t>> BatchGetInto(const std::vector<std::string>& keys,
                                             const std::vector<void*>& ptrs,
                                             const std::vector<size_t>& sizes);
  // Scatter/gather forms: object i is the concatenation of its buffers.
  std::vector<Status> BatchPutFromMultiBuffers(const std::vector<std::string>& keys,
                                               const std::vector<std::vector<const void*>>& ptrs,
                                               const std::vector<std::vector<size_t>>& sizes,
                                               const ReplicateConfig& config = {});
  std::vector<Result<uint64_t>> BatchGetIntoMultiBuffers(
      const std::vector<std::string>& keys, const std::vector<std::vector<void*>>& ptrs,
      const std::vector<std::vector<size_t>>& sizes);
  // Upsert: like BatchPutFrom but replaces an existing object.
  std::vector<Status> BatchUpsertFrom(const std::vector<std::string>& keys,
                                      const std::vector<const void*>& ptrs,
                                      const std::vector<size_t>& sizes,
                                      const ReplicateConfig& config = {});

  // Copying forms: `values` need not lie in registered memory (in standalone mode they pass
  // through the staging buffer shared with the node: one extra copy). Slower than the
  // zero-copy calls for large objects; meant for small values, tools and tests.
  // Errors: as Put / Get (no BUFFER_OVERFLOW: BatchGet sizes its own vectors).
  std::vector<Status> BatchPut(const std::vector<std::string>& keys,
                               const std::vector<std::span<const uint8_t>>& values,
                               const ReplicateConfig& config = {});
  std::vector<Result<std::vector<uint8_t>>> BatchGet(const std::vector<std::string>& keys);

  // true when a complete object exists. Errors: INVALID_KEY, RPC_FAIL, RPC_TIMEOUT.
  Result<bool> IsExist(const std::string& key);
  // The keys are views the caller keeps alive until the call returns (the Python module's point
  // into its str objects, so a batch costs no copy per key).
  std::vector<Result<bool>> BatchIsExist(std::span<const std::string_view> keys);
  std::vector<Result<bool>> BatchIsExist(const std::vector<std::string>& keys);
  // Number of leading keys that exist, answered by the master in one pass (HiCache's query).
  Result<size_t> ExistsPrefix(std::span<const std::string_view> keys);
  Result<size_t> ExistsPrefix(const std::vector<std::string>& keys);
  // The object's size. Errors: INVALID_KEY, OBJECT_NOT_FOUND, REPLICA_IS_NOT_READY, RPC_*.
  Result<uint64_t> GetSize(const std::string& key);

  // Removes one object. Errors: OBJECT_NOT_FOUND, OBJECT_HAS_LEASE (a reader holds it and not
  // force), REPLICA_IS_NOT_READY (being written), RPC_*.
  Status Remove(const std::string& key, bool force = false);
  std::vector<Status> BatchRemove(const std::vector<std::string>& keys, bool force = false);
  // Removes every complete object of this client's tenant (leased ones only with force; other
  // tenants' objects are never touched); returns how many.
  Result<uint64_t> RemoveAll(bool force = false);

  // One page of a scan over this client's tenant's keys (remove_by_regex, list_keys): the
  // complete objects' keys starting with `prefix` ("" every key); `cursor` is "" to start, then
  // the previous page's next_cursor until that comes back "". Each page is one master request
  // of bounded work (at most `limit` keys examined, 0: 1000), so a page may hold fewer keys
  // and still have a next_cursor. A key put or removed during a scan may or may not be seen;
  // none is returned twice. Errors: INVALID_PARAMS (limit above 10000, a foreign cursor),
  // RPC_*.
  struct KeyScanPage {
    std::vector<std::string> keys;
    std::string next_cursor;
  };
  Result<KeyScanPage> ScanKeys(const std::string& prefix, const std::string& cursor,
                               uint32_t limit);

  Result<PoolStat> Stat();

  // 0 healthy, 1 not set up (closed), 2 master (standalone: node or master) unreachable. Never
  // blocks past rpc_timeout.
  int HealthCheck();
  // Stops serving and unmounts the contributed segment (its objects leave the pool), stops the
  // heartbeat. Idempotent; calls after Close fail with UNAVAILABLE_IN_CURRENT_STATUS.
  Status Close();

  // The name of this process's contributed segment ("host:port"), empty when none.
  std::string SegmentName() const;

 protected:
  Client() = default;
  // UNAVAILABLE_IN_CURRENT_STATUS once Close() began; OK before.
  Status CheckOpen() const;

 private:
  // Put and Get after the vector forms' own checks: `results` holds what those found (OK for
  // an object to go on).
  std::vector<Status> RunPut(const ObjectBatch& batch, const ReplicateConfig& config, bool upsert,
                             bool registered, std::vector<Status> results);
  std::vector<Result<uint64_t>> RunGet(const ObjectBatch& batch,
                                       std::vector<Result<uint64_t>> results);

  // The operations that differ between the embedded and the standalone client. The public
  // calls above check that the client is open and validate the batch before calling them, and
  // call each under the same contract (errors, threading) as the public call it serves.
  virtual Status RegisterMemory(void* ptr, size_t size) = 0;
  virtual Status UnregisterMemory(void* ptr) = 0;
  // Puts the objects of `batch` whose results[i] is OK on entry (a valid key, at least one
  // byte, a config checked against the batch's length) and sets their results; leaves the
  // others. `registered`: the buffers must lie in registered memory (false: the copying calls'
  // memory, which the client reads as it is).
  virtual void PutObjects(const ObjectBatch& batch, const ReplicateConfig& config, bool upsert,
                          bool registered, std::vector<Status>& results) = 0;
  // Gets the objects of `batch` whose results[i] is OK on entry (a valid key) into their
  // registered buffers and sets their results; leaves the others.
  virtual void GetObjects(const ObjectBatch& batch, std::vector<Result<uint64_t>>& results) = 0;
  // BatchGet of valid keys, the client sizing the vectors.
  virtual std::vector<Result<std::vector<uint8_t>>> GetCopies(
      const std::vector<std::string>& keys) = 0;
  virtual std::vector<Result<bool>> ExistKeys(std::span<const std::string_view> keys) = 0;
  virtual Result<size_t> CountExistingPrefix(std::span<const std::string_view> keys) = 0;
  virtual Result<uint64_t> SizeOf(const std::string& key) = 0;
  virtual std::vector<Status> RemoveKeys(const std::vector<std::string>& keys, bool force) = 0;
  virtual Result<uint64_t> RemoveEvery(bool force) = 0;
  virtual Result<KeyScanPage> ScanPage(const std::string& prefix, const std::string& cursor,
                                       uint32_t limit) = 0;
  virtual Result<PoolStat> PoolStats() = 0;
  // HealthCheck of an open client: 0 or 2.
  virtual int Health() = 0;
  // Close's work, run once.
  virtual void Shutdown() = 0;
  // SegmentName of an open client.
  virtual std::string OwnSegment() const = 0;

  std::atomic<bool> closed_{false};
};

}  // namespace kvpool
