// The client library as `kvpool node` uses it: an embedded Client that hosts the node's segment,
// plus exactly the entry points the node needs beyond the public Client (include/kvpool/client.h).
// This header is the whole of the client library that src/node may see (with the shared wire
// conversions client/*_proto.h and client/client_security.h); the class behind it
// (client/embedded/client_impl.h) stays private to src/client. scripts/check-layers.sh keeps it so.
//
// Ownership: MakeHostedClient returns the sole owner; destroying it Close()s (unmounts the
// segment, stops the heartbeat and the data server).
// Threading: every method is thread-safe unless it says otherwise, like the public Client.
// Errors: as the public Client's, per method below.
#pragma once

#include <sys/uio.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "hosting/disk_host.h"
#include "kvpool/client.h"
#include "transfer/data_service.h"

namespace kvpool::client {

// One object's memory on the caller's side: its buffers in order.
using Buffers = std::vector<iovec>;
// Where object `index` of a get batch goes, once its size is known. An empty list means "no
// buffer" (INVALID_PARAMS); a list shorter than the object means BUFFER_OVERFLOW.
using DestFor = std::function<Buffers(size_t index, uint64_t object_size)>;

// What `kvpool node` sets beyond ClientOptions when it runs its store as a hosted client.
struct HostingOptions {
  // The data server's listen address; "": rpc::DefaultBindAddress of the announced host.
  std::string bind_host;
  bool prefault = false;  // fault the segment in at start (blocking)
  // Fault it in on a thread of its own after start (unset: ClientOptions decides).
  std::optional<bool> prefault_in_background;
  bool transparent_huge_pages = false;  // SegmentMemoryOptions::transparent_huge_pages
  int io_threads = 2;                   // data server threads
  // What a peer refused by protected mode is told to do (rpc::ServerOptions::insecure_hint).
  std::string insecure_hint = "set \"insecure\": true in the client's configuration";
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

class HostedClient : public Client {
 public:
  // Starts hosting: maps the segment, serves it over TCP, reaches the master and (with
  // HostingOptions::mount_at_init) mounts the segment and starts the heartbeat. Call once,
  // before any other method. Errors: as Client::Setup (with HostingOptions::require_master
  // false, an unreachable master is no error: the heartbeat mounts once it answers).
  virtual Status Init() = 0;

  // ---- Data calls of the node's attach service ----
  // Puts and gets of memory the caller has already checked and keeps mapped until the
  // call returns (the attach service's regions of a session): no registry check, so a node
  // need not register its sessions' regions with its own store. Our own segment is reached by
  // memcpy, peers' over TCP.
  // Checked as Client::Put / Get check a batch; per-key results and errors as theirs; every
  // wait is also bounded by `limit`.
  virtual std::vector<Status> PutVouched(const ObjectBatch& batch, const ReplicateConfig& config,
                                         bool upsert, Deadline limit) = 0;
  virtual std::vector<Result<uint64_t>> GetVouched(const ObjectBatch& batch, Deadline limit,
                                                   bool verify_checksum) = 0;
  // A get whose destinations are chosen once sizes are known (`dest_for`, called on this
  // thread, at most once per key); the memory need not be registered: the caller vouches for it.
  virtual std::vector<Result<uint64_t>> GetWithDest(const std::vector<std::string>& keys,
                                                    const DestFor& dest_for, Deadline limit,
                                                    bool verify_checksum) = 0;

  // ---- The hosted segment ----
  // With HostingOptions::mount_at_init false: mounts the contributed segment at the master and
  // starts the heartbeat. A failed mount is logged and the heartbeat mounts the segment once the
  // master answers. Call once, after Init, from the thread that called Init.
  virtual void MountSegmentNow() = 0;
  // True while the master answers the heartbeat.
  virtual bool MasterReachable() const = 0;
  // The data port of the contributed segment (0 when none).
  virtual uint16_t SegmentPort() const = 0;
  // Asks the master to place no new replicas on the contributed segment (graceful stop).
  // Errors: UNAVAILABLE_IN_CURRENT_MODE (no segment); as MasterClient::DrainSegment.
  virtual Status DrainOwnSegment() = 0;
  // Copies every object whose only replica is in the contributed segment to other segments (an
  // upsert from this segment's memory), until `until`. Call after DrainOwnSegment. While an
  // object is being copied, readers may briefly see it missing.
  virtual DrainCopyReport CopySoleReplicasAway(Deadline until) = 0;
  // The counters of the contributed segment's data service (null when none; owned by this
  // client, valid until it is destroyed).
  virtual const transfer::DataServiceCounters* DataCounters() const = 0;
  // The disk tier's figures (node metrics); nullopt without one.
  virtual std::optional<hosting::DiskHostStats> DiskStats() const = 0;
};

// An embedded client that will host a segment as `options` and `hosting` say (serve it over TCP,
// keep it mounted at the master); nothing starts before Init(). Never null.
std::unique_ptr<HostedClient> MakeHostedClient(const ClientOptions& options,
                                               HostingOptions hosting);

}  // namespace kvpool::client
