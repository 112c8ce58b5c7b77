// Liveness of clients (and nodes: to the master a node is a client that mounts segments).
//
// Every client id the master hears from is interned to a u32 handle, which objects and
// segments store instead of the string. A handle is never reused: a client that died and comes
// back gets a new one, so nothing recorded under its old life is mistaken for the new one.
//
// A client is "known" once it has pinged or mounted in this master process. Ping reports the
// previous value: false tells the client to (re)mount its segments, which is how clients
// recover after a master restart or after being declared dead.
//
// Threading: thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/time.h"

namespace kvpool::master {

class ClientRegistry {
 public:
  struct TouchResult {
    uint32_t handle = 0;
    bool was_known = false;
  };
  struct DeadClient {
    uint32_t handle = 0;
    std::string client_id;
  };

  // Records that `client_id` was heard from at `now`, registering it if new. `make_known`
  // (Ping, MountSegment) marks it known. REQUIRES: client_id is not empty.
  TouchResult Touch(std::string_view client_id, Clock::time_point now, bool make_known);
  // Removes and returns the clients last heard from at or before now - ttl.
  std::vector<DeadClient> ExpireDead(Clock::time_point now, Clock::duration ttl);
  size_t size() const;
  // When `client_id` was last heard from; nullopt for a client not registered.
  std::optional<Clock::time_point> LastSeen(std::string_view client_id) const;

  struct Snapshot {
    std::string client_id;
    uint32_t handle = 0;
    bool known = false;
    Clock::time_point last_seen;
  };
  // Every client, in no particular order (copies under the lock: for admin views, not hot paths).
  std::vector<Snapshot> List() const;

 private:
  struct Entry {
    uint32_t handle;
    bool known;
    Clock::time_point last_seen;
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> clients_;  // guarded by mu_
  uint32_t next_handle_ = 1;                        // guarded by mu_; 0 means "no client"
};

}  // namespace kvpool::master
