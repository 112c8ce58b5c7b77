// The node's view of attached standalone clients: one Session per attached client (its mapped
// regions, its connections, when it was last heard from) and the table of live sessions.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/time.h"
#include "node/mapped_region.h"
#include "rpc/unique_fd.h"

namespace kvpool::node {

// A connection's socket, shared by the server thread that owns it (and closes it) and its
// session (which shuts it down to end the connection from outside, waking that thread).
// Keeping both behind one lock means a shutdown can never hit a reused descriptor number.
class ConnectionHandle {
 public:
  explicit ConnectionHandle(rpc::UniqueFd fd) : fd_(std::move(fd)) {}
  // The descriptor, for the owning thread's I/O.
  int fd() const { return raw_; }
  // Makes pending and future I/O on the socket fail; no-op once closed.
  void Shutdown();
  // Closes the socket (owning thread, once).
  void Close();

 private:
  std::mutex mu_;
  rpc::UniqueFd fd_;  // guarded by mu_
  const int raw_ = fd_.get();
};

struct SessionInfo {
  uint64_t id = 0;
  uint64_t token = 0;
  std::string client_id;
  int pid = -1;
  int uid = -1;
  uint64_t mem_pool_size = 0;
};

class Session {
 public:
  explicit Session(SessionInfo info) : info_(std::move(info)), last_seen_(Clock::now()) {}
  const SessionInfo& info() const { return info_; }

  // Adds (or replaces) region `id`, handing back the replaced one (or null) in `replaced`.
  // False (nothing added) when the session was dropped.
  bool AddRegion(uint64_t id, std::shared_ptr<MappedRegion> region,
                 std::shared_ptr<MappedRegion>* replaced);
  // Removes region `id`; returns it (null when unknown).
  std::shared_ptr<MappedRegion> RemoveRegion(uint64_t id);
  // The region, held for the caller's operation (null when unknown or the session is dropped).
  std::shared_ptr<MappedRegion> FindRegion(uint64_t id) const;

  // Adds a connection to end when the session is dropped. False when already dropped.
  bool AddConnection(const std::shared_ptr<ConnectionHandle>& conn);
  void RemoveConnection(const std::shared_ptr<ConnectionHandle>& conn);

  void Touch();
  Clock::time_point last_seen() const;
  bool dropped() const;
  // Marks the session dropped, shuts its connections down and hands back its regions (they are
  // unmapped once the caller and every operation in flight let go). Idempotent.
  std::vector<std::shared_ptr<MappedRegion>> Drop();

  size_t region_count() const;
  uint64_t mapped_bytes() const;

 private:
  const SessionInfo info_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<MappedRegion>> regions_;  // guarded by mu_
  std::set<std::shared_ptr<ConnectionHandle>> connections_;    // guarded by mu_
  Clock::time_point last_seen_;                                // guarded by mu_
  bool dropped_ = false;                                       // guarded by mu_
};

class SessionTable {
 public:
  // A new session with a fresh id and random token.
  std::shared_ptr<Session> Create(SessionInfo info);
  // The live session with that id and token, or null.
  std::shared_ptr<Session> Find(uint64_t id, uint64_t token) const;
  // Removes a session from the table (the caller drops it). Null when not there.
  std::shared_ptr<Session> Remove(uint64_t id);
  // Removes and returns every session silent for longer than `ttl`.
  std::vector<std::shared_ptr<Session>> RemoveSilent(Clock::duration ttl);
  // Removes and returns every session.
  std::vector<std::shared_ptr<Session>> RemoveAll();
  std::vector<std::shared_ptr<Session>> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Session>> sessions_;  // guarded by mu_
  uint64_t next_id_ = 1;                                   // guarded by mu_
};

}  // namespace kvpool::node
