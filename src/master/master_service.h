// The master's RPC front: decodes each request of kvpool.proto's master methods, calls
// MasterCore with the current time and encodes the reply.
//
// Errors (as the reply's code): INVALID_PARAMS for a request whose meta does not parse or that
// carries a payload (master requests have none); NOT_SUPPORTED for a method the master does not
// serve (e.g. WRITE/READ); otherwise whatever the core returns for the whole request. Per-key
// outcomes travel inside an OK reply.
//
// Every call is counted in metrics() (requests, keys, per-key outcomes, latency, errors).
//
// Data-plane grants (rpc/grant.h): for a non-privileged (tenant) caller the replicas of a
// PUT_START reply carry WRITE grants and those of a leased GET_REPLICA_LIST reply READ grants,
// signed into the reply before it is encoded; privileged callers get none (no cost). A lookup
// without a lease gets none either: nothing keeps its ranges from being reused.
//
// Threading: thread-safe (the core is); runs on the server's I/O threads and never waits on I/O
// (a long-polling ping waits on a timer, not a thread).
#pragma once

#include <atomic>
#include <functional>
#include <span>
#include <vector>

#include "common/log_throttle.h"
#include "master/grant_issuer.h"
#include "master/journal_signal.h"
#include "master/master_core.h"
#include "master/master_metrics.h"
#include "master/tenant_scope.h"
#include "rpc/server.h"

namespace kvpool::master {

class MasterService : public rpc::Service {
 public:
  using ClockFn = std::function<Clock::time_point()>;
  // `core` must outlive the service. `clock` supplies `now` for every call (tests may fake it).
  // `grants` signs tenants' grants (the default issues none: a pool without a secret).
  explicit MasterService(MasterCore* core, ClockFn clock = &Clock::now, GrantIssuer grants = {})
      : core_(core), clock_(std::move(clock)), grants_(std::move(grants)) {}

  // A PUT_END is answered once, for each committed key, a host holding one of its replicas has
  // acknowledged the commit's journal entry (options().commit_ack_timeout; a key still unheld
  // then gets RPC_TIMEOUT): acknowledged puts survive a master failover or restart.
  // A PUT_START that replaced objects (upsert), a REMOVE and a REMOVE_ALL are answered once the
  // hosts of the freed replicas have acknowledged the frees (at most commit_ack_timeout; then
  // answered as they are, counted in frees_unacked): a successor master does not bring back a
  // version a client replaced or removed, beside or instead of the one it put after.
  // As a privileged default-tenant caller (tests, in-process use).
  asio::awaitable<rpc::Reply> Handle(const rpc::FrameHeader& header, std::string_view meta,
                                     rpc::PayloadReader& payload) override;
  // As the connection's tenant (master/tenant_scope.h): its keys live in its own namespace; a
  // non-privileged caller may not host segments.
  asio::awaitable<rpc::Reply> HandleFrom(const rpc::ConnectionContext& context,
                                         const rpc::FrameHeader& header, std::string_view meta,
                                         rpc::PayloadReader& payload) override;

  // The same dispatch without coroutines (used by Handle; handy in tests). A PUT_END answered
  // here does not wait for its commits to reach a host, nor a PUT_START, REMOVE or REMOVE_ALL
  // for its frees (see Handle); `marks`, when given, receives where they were journalled.
  rpc::Reply Dispatch(uint16_t method, std::string_view meta, Caller caller = {},
                      std::vector<MasterCore::JournalMark>* marks = nullptr);

  // Requests, keys, latency and errors of every call served so far.
  MasterMetrics& metrics() { return metrics_; }
  const MasterMetrics& metrics() const { return metrics_; }

  // The longest a ping may wait for journal entries, and how long a woken ping waits for more
  // entries to gather before it answers (one reply carries a burst of commits, not one each).
  static constexpr Clock::duration kMaxJournalWait = std::chrono::seconds(2);
  static constexpr Clock::duration kJournalGather = std::chrono::milliseconds(2);
  // The longest a waiting PUT_END sleeps between looks at its commits (a bound on a missed
  // wake-up, e.g. on a server whose connections share threads).
  static constexpr Clock::duration kCommitAckPoll = std::chrono::milliseconds(50);

 private:
  class WaiterHold;  // counts a call in commit_waiters_ while it waits (master_service.cc)
  asio::awaitable<rpc::Reply> Answer(const rpc::FrameHeader& header, std::string_view meta,
                                     rpc::PayloadReader& payload, Caller caller);
  // Holds a long-polling ping (Ping.journal_wait_ms) until a journal it acks has entries.
  asio::awaitable<void> AwaitJournal(std::string_view meta);
  // Dispatches a PUT_END and answers it once its commits are held by hosts (see Handle).
  asio::awaitable<rpc::Reply> AnswerPutEnd(std::string_view meta, Caller caller);
  // Dispatches a PUT_START, REMOVE or REMOVE_ALL and answers it once its frees are applied by
  // their hosts (see Handle).
  asio::awaitable<rpc::Reply> AnswerAfterFrees(uint16_t method, std::string_view meta,
                                               Caller caller);
  // Waits until every key of `marks` is held by a host or `wait` passes; `unacked` then names
  // the keys' reply indices still unheld. True when none is.
  asio::awaitable<bool> AwaitCommitsAcked(std::span<const MasterCore::JournalMark> marks,
                                          Clock::duration wait, std::vector<uint32_t>* unacked);

  MasterCore* const core_;
  const ClockFn clock_;
  const GrantIssuer grants_;
  MasterMetrics metrics_;
  LogThrottle frees_unacked_log_{std::chrono::seconds(10)};
  // Calls waiting for hosts (AnswerPutEnd, AnswerAfterFrees): a woken long-polling ping then
  // answers at once rather than gathering more entries (the calls wait on its round trip).
  std::atomic<int> commit_waiters_{0};
  // Notified when an upsert or a remove starts waiting for hosts: cuts a gathering ping short.
  JournalSignal waiters_signal_;
};

}  // namespace kvpool::master
