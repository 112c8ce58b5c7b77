// Keeps a process alive in the master's eyes: pings every interval and, when the master does
// not know the client (first contact, or the master restarted), calls `on_unknown` so the
// caller can mount its segments again. Owns one thread; Stop() (or the destructor) joins it.
//
// With a segment host, each ping also acknowledges the segment's journal and asks the master
// to hold the reply until new entries exist (a long poll of at most kJournalWait); the entries
// are applied to the host's object list and the next ping follows at once. So the host learns
// of a commit within milliseconds, and the master still hears from it at least every
// kJournalWait.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/time.h"
#include "hosting/segment_host.h"
#include "master_client/master_client.h"

namespace kvpool::hosting {

class Heartbeat {
 public:
  // Longest a long-polling ping waits for journal entries (also bounds Stop()'s wait).
  static constexpr Clock::duration kJournalWait = std::chrono::milliseconds(250);

  // `master` and `host` (may be null: no segment) must outlive the heartbeat. `on_unknown`
  // runs on the heartbeat thread.
  Heartbeat(master::MasterClient* master, Clock::duration interval, Clock::duration rpc_timeout,
            std::function<void()> on_unknown, SegmentHost* host = nullptr);
  ~Heartbeat();
  void Start();
  void Stop();

  // True when the last call to the master (ping, or a mount reported by NoteMasterCall) was
  // answered.
  bool master_reachable() const { return reachable_.load(); }

  // Reports the outcome of a call to the master made outside the heartbeat (the node's first
  // mount): RPC_FAIL / RPC_TIMEOUT mark the master unreachable, any answer marks it reachable.
  // So a master that stops answering during start-up is reported within one call's deadline,
  // not after that call and a ping more. Thread-safe.
  void NoteMasterCall(const Status& st);

 private:
  void Run();
  // Returns true when the next ping should follow at once (a long poll was answered).
  bool PingOnce();
  void SetReachable(bool reachable, const Status& why);

  master::MasterClient* master_;
  const Clock::duration interval_;
  const Clock::duration rpc_timeout_;
  std::function<void()> on_unknown_;
  SegmentHost* const host_;
  std::atomic<bool> reachable_{true};
  bool remounted_ = false;  // heartbeat thread only: the last ping found us unknown and mounted
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace kvpool::hosting
