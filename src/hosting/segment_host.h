// Serves one segment of this process's DRAM to the pool: maps the memory, runs the data server
// (rpc WRITE/READ) and mounts the segment at the master. Used by `kvpool node` and by an
// embedded client that contributes memory.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "common/time.h"
#include "hosting/disk_host.h"
#include "hosting/object_list.h"
#include "kvpool/status.h"
#include "master_client/master_client.h"
#include "rpc/server.h"
#include "transfer/data_service.h"
#include "transfer/segment_table.h"

namespace kvpool::hosting {

struct SegmentHostOptions {
  std::string bind_host = "0.0.0.0";               // address the data server listens on
  std::string advertise_host = "127.0.0.1";        // how peers reach it; with the port, the name
  uint16_t port = 0;                               // 0: any free port (of port_range when set)
  std::pair<uint16_t, uint16_t> port_range{0, 0};  // rpc::ServerOptions::port_range
  uint64_t size = 0;                               // segment bytes (> 0)
  transfer::SegmentMemoryOptions memory;
  int io_threads = 2;
  uint64_t zero_copy_min_bytes = 0;  // rpc::ServerOptions::zero_copy_min_bytes of the data port
  rpc::SecurityOptions security;     // secret and TLS of the data port (docs/security.md)
  bool protected_mode = false;       // rpc::ServerOptions::protected_mode of the data port
  std::string insecure_hint = "start the node with --insecure";  // its message's fix
  // A disk tier below the segment (hosting/disk_host.h); none when absent.
  std::optional<DiskHostOptions> disk;
};

class SegmentHost : private transfer::WriteRecorder {
 public:
  // Maps the segment and starts serving it (not yet mounted).
  // Errors: INVALID_PARAMS (size 0), NO_AVAILABLE_HANDLE (mapping failed), RPC_FAIL (port taken);
  // with a disk tier, its errors (disk::DiskTier::Open: bad path, no space).
  static Result<std::unique_ptr<SegmentHost>> Start(const SegmentHostOptions& options);
  ~SegmentHost() override;  // stops serving (callers unmount first)

  // Mounts the segment at the master under name() for the stub's client. Used again when the
  // master no longer knows the client: a master that restarted (another epoch than the last
  // mount's) gets the segment's object list with it and rebuilds those objects; the same
  // master (it declared this host dead and dropped its objects) gets an empty segment.
  // Errors: as MasterClient::MountSegment.
  Status Mount(master::MasterClient& master, Deadline deadline);
  // The segment's complete objects, kept up to date from the master's journal.
  ObjectList& objects() { return objects_; }
  // Heartbeat plumbing: the ack to send for this segment, and a reply's journal to apply.
  rpc::JournalAck JournalAck() const;
  // Adds the acks of this segment and of its disk tier's segment.
  void AddJournalAcks(rpc::Ping* ping) const;
  void ApplyJournals(const rpc::PingReply& reply);
  // Unmounts it; the master drops the objects stored in it.
  Status Unmount(master::MasterClient& master, Deadline deadline);
  // True after a Mount succeeded, until a later Mount fails or Unmount: a host that is not
  // mounted mounts again at its next heartbeat. Thread-safe.
  bool mounted() const { return mounted_.load(std::memory_order_acquire); }

  // "advertise_host:port": the segment's name and data endpoint.
  const std::string& name() const { return name_; }
  // The data server's bound port.
  uint16_t port() const { return server_->port(); }
  const transfer::SegmentTable& table() const { return table_; }
  const transfer::DataServiceCounters& counters() const { return service_.counters(); }
  uint64_t size() const { return size_; }
  // The segment memory's incarnation (transfer::SegmentMemory::incarnation).
  uint64_t incarnation() const { return incarnation_; }
  // The disk tier, or null.
  DiskHost* disk() const { return disk_.get(); }
  // Lists what this process writes into the segment itself (transfer::LocalTransport), as the
  // data service does for peers' WRITEs.
  transfer::WriteRecorder* write_recorder() { return this; }

 private:
  SegmentHost(const SegmentHostOptions& options);
  // Lists the objects a WRITE of this segment names (transfer::WriteRecorder), so that the
  // master may answer their writer's PUT_END without waiting for this host's journal ack.
  bool RecordWrites(const rpc::DataRequest& req, std::span<const uint64_t> checksums) override;
  // Removes from `list` (and from objects()) the objects whose bytes do not match their
  // checksum, or that lie outside the segment. Returns how many.
  size_t DropMismatched(std::vector<rpc::StoredObject>& list);

  transfer::SegmentTable table_;
  transfer::DataService service_;  // checks tenants' grants with the pool secret
  std::unique_ptr<rpc::Server> server_;
  std::string name_;
  uint64_t size_ = 0;
  uint64_t incarnation_ = 0;
  ObjectList objects_;
  std::unique_ptr<DiskHost> disk_;  // the service reads through it; ~SegmentHost stops both
  uint64_t mounted_epoch_ = 0;      // master epoch of the last successful mount (0: none yet)
  std::atomic<bool> mounted_{false};
};

}  // namespace kvpool::hosting
