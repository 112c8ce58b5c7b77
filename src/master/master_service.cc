#include "master/master_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>

#include "common/keys.h"
#include "master/tenant_scope.h"
#include "rpc/endpoint.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::master {
namespace {

// How long a master thread polls for the PUT_END that follows a PUT_START (Reply::
// next_request_within): a small put's write (~40 us), with room for a busy client. A thread
// asleep by then costs the put 30-80 us more to wake (docs/benchmarks.md, round 22).
constexpr std::chrono::microseconds kPutEndExpectedWithin{300};

template <typename M>
bool Parse(std::string_view meta, M* msg) {
  return msg->ParseFromArray(meta.data(), static_cast<int>(meta.size()));
}

rpc::Reply Unparsable(std::string_view method, MasterMetrics::Call& call) {
  call.Error(ErrorCode::INVALID_PARAMS);
  return rpc::Reply::Error(
      Status(ErrorCode::INVALID_PARAMS, fmt::format("{}: request does not parse", method)));
}

// Keys a request carries, for metrics.
uint64_t KeysOf(const rpc::PutStart& r) { return r.items_size(); }
uint64_t KeysOf(const rpc::PutEnd& r) { return r.commit_keys_size() + r.revoke_keys_size(); }
uint64_t KeysOf(const rpc::KeysRequest& r) { return r.keys_size(); }
template <typename M>
uint64_t KeysOf(const M&) {
  return 0;
}

// Per-key outcomes of a reply, for metrics (replies without per-key results have none).
template <typename M>
void OutcomesOf(const M& m, MasterMetrics::Call& call) {
  if constexpr (requires { call.Outcomes(m); }) call.Outcomes(m);
}

rpc::Reply ReplyOf(const Status& st, MasterMetrics::Call& call) {
  if (!st.ok()) {
    call.Error(st.code());
    return rpc::Reply::Error(st);
  }
  return rpc::Reply::Of(rpc::Empty());
}

template <typename T>
rpc::Reply ReplyOf(const Result<T>& r, MasterMetrics::Call& call) {
  if (!r.ok()) {
    call.Error(r.code());
    return rpc::Reply::Error(r.status());
  }
  OutcomesOf(r.value(), call);
  return rpc::Reply::Of(r.value());
}

// A reply message (partial ordering prefers the Result overload above for a Result).
template <typename M>
rpc::Reply ReplyOf(const M& m, MasterMetrics::Call& call) {
  OutcomesOf(m, call);
  return rpc::Reply::Of(m);
}

// Parses a `Req` from `meta` and answers `call(req)`, accounting it in `mc`.
template <typename Req, typename Call>
rpc::Reply Serve(std::string_view name, std::string_view meta, MasterMetrics::Call& mc,
                 Call&& call) {
  Req req;
  if (!Parse(meta, &req)) return Unparsable(name, mc);
  mc.Keys(KeysOf(req));
  return ReplyOf(call(req), mc);
}

// ServeKeys for a parsed request.
template <typename Req, typename Call>
rpc::Reply ServeParsedKeys(Req& req, MasterMetrics::Call& mc, Caller caller, Call&& call) {
  mc.Keys(KeysOf(req));
  if (!caller.scoped()) return ReplyOf(call(req), mc);
  KeyScope scope = ScopeRequest(caller, &req);
  auto result = call(req);
  Unscope(scope, &result);
  return ReplyOf(result, mc);
}

// Serve for a request that names keys: they are moved into the caller's tenant namespace
// first, and the reply's messages show the caller's keys again (master/tenant_scope.h).
template <typename Req, typename Call>
rpc::Reply ServeKeys(std::string_view name, std::string_view meta, MasterMetrics::Call& mc,
                     Caller caller, Call&& call) {
  Req req;
  if (!Parse(meta, &req)) return Unparsable(name, mc);
  return ServeParsedKeys(req, mc, caller, std::forward<Call>(call));
}

// Ends the read leases a request carries for its client (released_leases, piggybacked on the
// client's next request instead of a message of their own).
template <typename Req>
void ReleasePiggybacked(MasterCore& core, const Req& req, MasterCore::TimePoint now) {
  if (req.released_leases_size() == 0) return;
  core.ReleaseLeases(
      req.client_id(),
      {req.released_leases().data(), static_cast<size_t>(req.released_leases_size())}, now);
}

// EXISTS, whose keys usually come packed (KeysRequest.packed_keys): looked up as views into the
// request for a caller whose keys pass unchanged; unpacked into `keys` for a scoped caller,
// whose keys are rewritten anyway.
rpc::Reply ServeExists(std::string_view meta, MasterMetrics::Call& mc, Caller caller,
                       MasterCore& core, MasterCore::TimePoint now) {
  rpc::KeysRequest req;
  if (!Parse(meta, &req)) return Unparsable("exists", mc);
  ReleasePiggybacked(core, req, now);
  auto call = [&](const rpc::KeysRequest& r) { return core.Exists(r, now); };
  if (req.packed_keys().empty()) return ServeParsedKeys(req, mc, caller, call);
  if (req.keys_size() > 0) {  // which would the reply's codes follow?
    return ReplyOf(Status(ErrorCode::INVALID_PARAMS, "exists: both keys and packed_keys are set"),
                   mc);
  }
  auto keys = UnpackKeys(req.packed_keys());
  if (!keys.ok()) return ReplyOf(keys.status(), mc);
  if (!caller.scoped()) {
    mc.Keys(keys->size());
    return ReplyOf(core.Exists(*keys, now), mc);
  }
  for (std::string_view k : *keys) req.add_keys(k.data(), k.size());
  req.clear_packed_keys();
  return ServeParsedKeys(req, mc, caller, call);
}

// A segment announced at a loopback address by a host that reached us over the network is
// unreachable for every other host: refused up front rather than failing every client's put.
Status CheckReachableEndpoint(const rpc::MountSegment& req, Caller caller) {
  if (caller.network_peer.empty()) return Status::Ok();
  auto ep = rpc::ParseEndpoint(req.endpoint(), 0, "segment endpoint");
  if (!ep.ok() || !rpc::IsLoopbackHost(ep->host)) return Status::Ok();
  spdlog::warn("segment={} mount from {} refused: its endpoint {} is a loopback address",
               req.segment_name(), caller.network_peer, req.endpoint());
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("segment={}: endpoint {} is a loopback address, but its host reached "
                            "the master from {}, over the network: other hosts cannot reach it. "
                            "Start the node without --host (it announces its address toward the "
                            "master) or with --host set to an address other hosts reach (an "
                            "embedded client: local_hostname)",
                            req.segment_name(), req.endpoint(), caller.network_peer));
}

// The address of a caller that connected over the network ("" for loopback and in-process).
std::string PeerHost(Caller caller) {
  if (caller.network_peer.empty()) return {};
  auto ep = rpc::ParseEndpoint(caller.network_peer, 0, "peer");
  return ep.ok() ? ep->host : std::string(caller.network_peer);
}

// What a client moves between this request and its next one, at its own pace (the request's
// *_pace_ns_per_kib; 0: unknown). Both come from the wire: the sum saturates and the time is
// capped, so any values give a sane hint (a hint only steers polling).
struct Transfer {
  static constexpr std::chrono::microseconds kLongest = std::chrono::seconds(1);
  uint64_t bytes = 0;
  uint32_t ns_per_kib = 0;

  void Add(uint64_t n) { bytes = n > UINT64_MAX - bytes ? UINT64_MAX : bytes + n; }
  std::chrono::microseconds Time() const {
    const uint64_t kib = bytes / 1024;
    const auto longest_ns = static_cast<uint64_t>(kLongest.count()) * 1000;
    if (ns_per_kib != 0 && kib > longest_ns / ns_per_kib) return kLongest;
    return std::chrono::microseconds(kib * ns_per_kib / 1000);
  }
};

// Hints on when the client's next request follows this reply (rpc::Reply), from what it is to
// move first and its pace (0: unknown). After PUT_START the PUT_END is polled for, and after
// GET_REPLICA_LIST the idle poll runs as after any request, unless the transfer outlasts
// kPutEndExpectedWithin: that request would find the thread asleep anyway, and on a machine with
// few CPUs the poll takes one the transfer needs (docs/benchmarks.md, round 24).
void HintNextRequest(uint16_t method, const Transfer& transfer, rpc::Reply& reply) {
  if (reply.code != ErrorCode::OK) return;
  const std::chrono::microseconds took = transfer.Time();
  if (took > kPutEndExpectedWithin) {
    reply.next_request_after = took;
  } else if (method == rpc::PUT_START) {
    reply.next_request_within = kPutEndExpectedWithin;
  }
}

}  // namespace

rpc::Reply MasterService::Dispatch(uint16_t method, std::string_view meta, Caller caller,
                                   std::vector<MasterCore::JournalMark>* marks) {
  MasterCore& c = *core_;
  const auto now = clock_();
  MasterMetrics::Call mc(&metrics_, MetricMethodOf(method));
  if (Status st = CheckMethodAllowed(caller, method); !st.ok()) return ReplyOf(st, mc);
  switch (method) {
    case rpc::PING:
      return Serve<rpc::Ping>("ping", meta, mc, [&](auto& r) -> Result<rpc::PingReply> {
        StripPrivilegedFields(caller, &r);
        ReleasePiggybacked(c, r, now);
        if (!caller.privileged && c.HostsSegments(r.client_id())) {
          // Its pings would keep a dead host's segments (and their objects) in the pool.
          return Status(ErrorCode::ILLEGAL_CLIENT,
                        fmt::format("client_id={} hosts segments: only pool components (the "
                                    "pool secret) may ping for it",
                                    r.client_id()));
        }
        return c.Ping(r, now);
      });
    case rpc::MOUNT_SEGMENT:
      return Serve<rpc::MountSegment>("mount segment", meta, mc,
                                      [&](const auto& r) -> Result<rpc::MountSegmentReply> {
                                        KVPOOL_RETURN_IF_ERROR(CheckReachableEndpoint(r, caller));
                                        return c.MountSegment(r, now, PeerHost(caller));
                                      });
    case rpc::UNMOUNT_SEGMENT:
      return Serve<rpc::UnmountSegment>("unmount segment", meta, mc,
                                        [&](const auto& r) { return c.UnmountSegment(r, now); });
    case rpc::DRAIN_SEGMENT:
      return Serve<rpc::DrainSegment>("drain segment", meta, mc,
                                      [&](const auto& r) { return c.DrainSegment(r, now); });
    case rpc::PUT_START: {
      Transfer write;
      rpc::Reply reply =
          ServeKeys<rpc::PutStart>("put start", meta, mc, caller, [&](const auto& r) {
            ReleasePiggybacked(c, r, now);
            for (const rpc::PutItem& item : r.items()) write.Add(item.size());
            write.ns_per_kib = r.write_pace_ns_per_kib();
            auto started = c.PutStart(r, now, marks);
            if (started.ok() && !caller.privileged) grants_.Attach(*started, rpc::UnixMillisNow());
            return started;
          });
      HintNextRequest(method, write, reply);
      return reply;
    }
    case rpc::PUT_END:
      return ServeKeys<rpc::PutEnd>("put end", meta, mc, caller, [&](const auto& r) {
        if (caller.privileged) {
          metrics_.CommitsListedOnWrite(static_cast<uint64_t>(
              std::count(r.recorded_by_host().begin(), r.recorded_by_host().end(), true)));
        }
        if (caller.privileged ||
            (r.unreachable_segments_size() == 0 && r.recorded_by_host_size() == 0)) {
          return c.PutEnd(r, now, marks);
        }
        // A tenant's client may not take segments out of placement, nor speak for a host (a
        // pool component's report is trusted: it proved the pool secret).
        rpc::PutEnd stripped = r;
        stripped.clear_unreachable_segments();
        stripped.clear_recorded_by_host();
        return c.PutEnd(stripped, now, marks);
      });
    case rpc::GET_REPLICA_LIST: {
      Transfer read;
      rpc::Reply reply =
          ServeKeys<rpc::KeysRequest>("get replica list", meta, mc, caller, [&](const auto& r) {
            ReleasePiggybacked(c, r, now);
            rpc::GetReplicaListReply located = c.GetReplicaList(r, now);
            if (!caller.privileged && !r.no_lease()) grants_.Attach(located, rpc::UnixMillisNow());
            for (const rpc::ObjectLocation& o : located.objects()) {
              if (o.code() == 0) read.Add(o.size());
            }
            read.ns_per_kib = r.read_pace_ns_per_kib();
            return located;
          });
      HintNextRequest(method, read, reply);
      return reply;
    }
    case rpc::EXISTS:
      return ServeExists(meta, mc, caller, c, now);
    case rpc::EXISTS_PREFIX:
      return ServeKeys<rpc::KeysRequest>("exists prefix", meta, mc, caller, [&](const auto& r) {
        ReleasePiggybacked(c, r, now);
        return c.ExistsPrefix(r, now);
      });
    case rpc::REMOVE:
      return ServeKeys<rpc::KeysRequest>("remove", meta, mc, caller, [&](const auto& r) {
        ReleasePiggybacked(c, r, now);
        return c.Remove(r, now, marks);
      });
    case rpc::LEASE_RELEASE:
      return Serve<rpc::LeaseRelease>("lease release", meta, mc,
                                      [&](const auto& r) { return c.LeaseRelease(r, now); });
    case rpc::REMOVE_ALL:
      return Serve<rpc::RemoveAll>("remove all", meta, mc, [&](const auto& r) {
        ReleasePiggybacked(c, r, now);
        return c.RemoveAll(r, now, caller.tenant, marks);
      });
    case rpc::STAT:
      return Serve<rpc::Empty>("stat", meta, mc, [&](const auto&) { return c.Stat(); });
    case rpc::SCAN_KEYS:
      // The caller's tenant scopes the scan; its keys come back as the caller's user keys.
      return Serve<rpc::ScanKeys>("scan keys", meta, mc, [&](const auto& r) {
        ReleasePiggybacked(c, r, now);
        return c.ScanKeys(r, caller.tenant);
      });
    case rpc::TIER_UPDATE:
      return Serve<rpc::TierUpdate>("tier update", meta, mc,
                                    [&](const auto& r) { return c.TierUpdate(r, now); });
    case rpc::PROMOTE:
      return Serve<rpc::Promote>("promote", meta, mc,
                                 [&](const auto& r) { return c.Promote(r, now); });
    default:
      mc.Error(ErrorCode::NOT_SUPPORTED);
      return rpc::Reply::Error(Status(
          ErrorCode::NOT_SUPPORTED, fmt::format("method {} is not served by the master", method)));
  }
}

namespace {
// A JournalSignal waker that ends `timer`'s wait: the cancel runs on the timer's own executor,
// never on the notifying thread (which may hold a segment's lock).
JournalSignal::Waker CancelOnNotify(const std::shared_ptr<asio::steady_timer>& timer) {
  return [timer] { asio::post(timer->get_executor(), [timer] { timer->cancel(); }); };
}
}  // namespace

// Counts a call among the ones waiting for hosts (commit_waiters_) from Begin until it goes out
// of scope.
class MasterService::WaiterHold {
 public:
  WaiterHold() = default;
  WaiterHold(const WaiterHold&) = delete;
  WaiterHold& operator=(const WaiterHold&) = delete;
  ~WaiterHold() {
    if (count_ != nullptr) count_->fetch_sub(1, std::memory_order_relaxed);
  }
  void Begin(std::atomic<int>& count) {
    if (count_ != nullptr) return;
    count_ = &count;
    count.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  std::atomic<int>* count_ = nullptr;
};

asio::awaitable<rpc::Reply> MasterService::Handle(const rpc::FrameHeader& header,
                                                  std::string_view meta,
                                                  rpc::PayloadReader& payload) {
  co_return co_await Answer(header, meta, payload, Caller{});
}

asio::awaitable<rpc::Reply> MasterService::HandleFrom(const rpc::ConnectionContext& context,
                                                      const rpc::FrameHeader& header,
                                                      std::string_view meta,
                                                      rpc::PayloadReader& payload) {
  Caller caller;
  caller.tenant = context.tenant_id;
  caller.privileged = context.privileged;
  if (!context.from_loopback) caller.network_peer = context.peer;
  co_return co_await Answer(header, meta, payload, caller);
}

asio::awaitable<rpc::Reply> MasterService::Answer(const rpc::FrameHeader& header,
                                                  std::string_view meta,
                                                  rpc::PayloadReader& payload, Caller caller) {
  if (payload.size() != 0) {
    co_return rpc::Reply::Error(
        Status(ErrorCode::INVALID_PARAMS,
               fmt::format("master requests carry no payload; got {} bytes", payload.size())));
  }
  // Only segment hosts (privileged) long-poll their journals.
  if (header.base_method() == rpc::PING && caller.privileged) co_await AwaitJournal(meta);
  switch (header.base_method()) {
    case rpc::PUT_END:
      co_return co_await AnswerPutEnd(meta, caller);
    case rpc::PUT_START:
    case rpc::REMOVE:
    case rpc::REMOVE_ALL:
      co_return co_await AnswerAfterFrees(header.base_method(), meta, caller);
    default:
      co_return Dispatch(header.base_method(), meta, caller);
  }
}

asio::awaitable<rpc::Reply> MasterService::AnswerAfterFrees(uint16_t method, std::string_view meta,
                                                            Caller caller) {
  const Clock::duration wait = core_->options().commit_ack_timeout;
  if (wait == Clock::duration::zero()) co_return Dispatch(method, meta, caller);
  // A remove is counted before its frees are journalled, so the ping they wake answers at once.
  // A put start only once it freed something: most free nothing, and counting them would keep
  // pings from gathering the journal entries of the evictions they make.
  WaiterHold hold;
  if (method != rpc::PUT_START) hold.Begin(commit_waiters_);
  std::vector<MasterCore::JournalMark> frees;
  rpc::Reply reply = Dispatch(method, meta, caller, &frees);
  std::vector<uint32_t> unacked;
  if (!frees.empty()) {
    hold.Begin(commit_waiters_);
    // A ping the frees woke may already be gathering more entries: it answers now.
    waiters_signal_.Notify();
    co_await AwaitCommitsAcked(frees, wait, &unacked);
  }
  if (unacked.empty()) co_return reply;
  // Answered as it is: the objects are gone here; only a successor master that rebuilds from
  // the hosts' lists before those hosts apply the frees could bring them back.
  metrics_.FreesUnacked(unacked.size());
  if (auto held = frees_unacked_log_.Allow()) {
    spdlog::warn(
        "{}: {} segment host(s) had not dropped the replaced or removed object(s) after "
        "{} ms (--commit_ack_timeout_ms): a master restart now may bring them back{}",
        method == rpc::PUT_START ? "put start (upsert)"
                                 : (method == rpc::REMOVE ? "remove" : "remove all"),
        unacked.size(), std::chrono::duration_cast<Millis>(wait).count(),
        *held > 0 ? fmt::format(" ({} more such calls since the last line)", *held)
                  : std::string());
  }
  co_return reply;
}

asio::awaitable<rpc::Reply> MasterService::AnswerPutEnd(std::string_view meta, Caller caller) {
  const Clock::duration wait = core_->options().commit_ack_timeout;
  if (wait == Clock::duration::zero()) co_return Dispatch(rpc::PUT_END, meta, caller);
  // Counted before the commits are journalled, so the ping they wake answers at once.
  WaiterHold hold;
  hold.Begin(commit_waiters_);
  std::vector<MasterCore::JournalMark> marks;
  rpc::Reply reply = Dispatch(rpc::PUT_END, meta, caller, &marks);
  std::vector<uint32_t> unacked;
  bool held = marks.empty() || reply.code != ErrorCode::OK;
  if (!held) held = co_await AwaitCommitsAcked(marks, wait, &unacked);
  rpc::CodesReply codes;
  if (held || !Parse(reply.meta, &codes)) co_return reply;
  // The objects stay committed (their hosts may still record them, and a retried put finds
  // them), but this master cannot promise that its successor would know them.
  if (codes.messages_size() == 0) {
    for (int i = 0; i < codes.codes_size(); ++i) codes.add_messages();
  }
  for (uint32_t i : unacked) {
    if (static_cast<int>(i) >= codes.codes_size()) continue;
    codes.set_codes(static_cast<int>(i), static_cast<int32_t>(ErrorCode::RPC_TIMEOUT));
    codes.set_messages(static_cast<int>(i),
                       fmt::format("commit not yet recorded by any replica's host after {} ms "
                                   "(--commit_ack_timeout_ms): the put may not survive a master "
                                   "failover; retry it",
                                   std::chrono::duration_cast<Millis>(wait).count()));
  }
  metrics_.CommitsUnacked(unacked.size());
  spdlog::warn("put end: {} of {} commit(s) not recorded by any replica's host within {} ms",
               unacked.size(), codes.codes_size(),
               std::chrono::duration_cast<Millis>(wait).count());
  co_return rpc::Reply::Of(codes);
}

asio::awaitable<bool> MasterService::AwaitCommitsAcked(
    std::span<const MasterCore::JournalMark> marks, Clock::duration wait,
    std::vector<uint32_t>* unacked) {
  const auto until = Clock::now() + wait;
  auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
  JournalSignal& signal = core_->ack_signal();
  while (true) {
    // Subscribe before looking: an acknowledgement in between wakes the wait at once.
    uint64_t id = signal.Subscribe(CancelOnNotify(timer));
    if (core_->CommitsAcked(marks, unacked) || Clock::now() >= until) {
      signal.Unsubscribe(id);
      co_return unacked->empty();
    }
    timer->expires_at(std::min(until, Clock::now() + kCommitAckPoll));
    asio::error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    signal.Unsubscribe(id);
  }
}

asio::awaitable<void> MasterService::AwaitJournal(std::string_view meta) {
  rpc::Ping req;
  if (!Parse(meta, &req)) co_return;
  // Its acknowledgements count now, not after the wait: puts wait on them.
  core_->AckJournals(req);
  if (req.journal_wait_ms() == 0 || req.journal_acks_size() == 0) co_return;
  // A ping from a segment host may wait for journal entries (a long poll), so that commits
  // reach the host within a few milliseconds. It sleeps until a journal grows (JournalSignal
  // cancels its timer) or the wait ends: an idle master does no work between heartbeats. The
  // wait never exceeds kMaxJournalWait, well inside the host's deadline.
  auto wait =
      std::min<Clock::duration>(std::chrono::milliseconds(req.journal_wait_ms()), kMaxJournalWait);
  const auto until = Clock::now() + wait;
  auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
  JournalSignal& signal = core_->journal_signal();
  bool woken = false;
  while (Clock::now() < until) {
    // Subscribe before looking: an entry appended in between wakes the wait at once.
    uint64_t id = signal.Subscribe(CancelOnNotify(timer));
    if (core_->JournalReady(req)) {
      signal.Unsubscribe(id);
      break;
    }
    timer->expires_at(until);
    asio::error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    signal.Unsubscribe(id);
    woken = woken || ec == asio::error::operation_aborted;
  }
  if (woken && Clock::now() < until && commit_waiters_.load(std::memory_order_relaxed) == 0) {
    // Let the rest of a burst of commits join this reply, unless a call starts waiting for
    // this host meanwhile (an upsert's or remove's frees: waiters_signal_).
    uint64_t id = waiters_signal_.Subscribe(CancelOnNotify(timer));
    if (commit_waiters_.load(std::memory_order_relaxed) == 0) {
      timer->expires_after(kJournalGather);
      asio::error_code ec;
      co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    waiters_signal_.Unsubscribe(id);
  }
}

}  // namespace kvpool::master
