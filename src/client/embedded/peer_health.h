// Which segment hosts this client recently found silent: a data connection to them made no
// progress (a partition, a hung host) or could not be made. Reads try such a host's replicas
// last for a while, so one silent host costs a batch one stall, not one per batch, until the
// master notices the host is gone (its --client_ttl) and stops listing its replicas.
//
// Only timeouts and refused connections count; a peer's own answer (a missing object, a
// checksum mismatch) says it is alive.
//
// Threading: thread-safe; every method takes one mutex briefly.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/time.h"
#include "kvpool/status.h"

namespace kvpool::client {

class PeerHealth {
 public:
  // A peer found silent is avoided for `avoid_for` after the failure.
  explicit PeerHealth(Clock::duration avoid_for) : avoid_for_(avoid_for) {}

  // True for the codes that say the peer did not answer in time or could not be reached.
  static bool MeansSilent(ErrorCode code);

  // Records the outcome of a move to the segment host at `endpoint` ("host:port"): a failure
  // whose code MeansSilent marks it silent (logged the first time), a success clears it.
  void Note(const std::string& endpoint, const Status& outcome, Clock::time_point now);
  // False when no peer was found silent lately (or all have answered since): a quick check
  // without the lock, for callers with nothing to clear.
  bool AnySilent() const { return entries_.load(std::memory_order_relaxed) != 0; }
  // True while `endpoint` is being avoided.
  bool Avoided(const std::string& endpoint, Clock::time_point now) const;

  struct Counters {
    uint64_t marked_silent = 0;  // failures that marked a peer silent
    uint64_t recovered = 0;      // a silent peer answered again
  };
  Counters counters() const;
  // "host:port" of the peers avoided now (for status pages and logs).
  std::vector<std::string> AvoidedNow(Clock::time_point now) const;

 private:
  const Clock::duration avoid_for_;
  mutable std::mutex mu_;
  std::map<std::string, Clock::time_point> silent_until_;  // guarded by mu_
  // silent_until_.size(), read without the lock: a get's replica order costs no lock while no
  // peer is silent (the usual case).
  std::atomic<size_t> entries_{0};
  Counters counters_;  // guarded by mu_
};

}  // namespace kvpool::client
