// Zero-copy sends (Linux MSG_ZEROCOPY) on one TCP socket: large sends hand the kernel the
// caller's pages instead of copying them into socket buffers, and the kernel reports on the
// socket's error queue when it no longer needs them (docs/architecture.md, "Zero-copy sends").
//
// When it pays: on a NIC with scatter-gather, a send of tens of KiB or more saves the copy. On
// loopback, a veth pair or a device without scatter-gather the kernel copies anyway, later and
// at a higher cost (docs/benchmarks.md, "Zero-copy sends"); it says so in each completion
// (SO_EE_CODE_ZEROCOPY_COPIED), and this class then stops asking on that socket. So a socket
// pays for zero-copy only where it works, and for a handful of sends where it does not.
//
// Buffer lifetime: the kernel pins the pages it was handed (memory safety never depends on the
// caller), but it reads their contents as late as the moment the bytes go out, or are sent
// again. A caller may reuse its memory once the peer has answered for every byte (a kvpool
// reply comes only after the whole request payload was received), which is how every caller
// here uses it; memory that may change before that must not be sent this way.
//
// Every send with MSG_ZEROCOPY leaves one completion on the socket's error queue, which makes
// poll() report POLLERR and counts against the socket's option memory (a full queue fails
// sends with ENOBUFS). Reap() drains it; call it before waiting on the socket.
//
// Threading: not thread-safe; one per socket, used by whoever owns the socket.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kvpool::rpc {

// The size at and above which a send goes zero-copy by default (ClientOptions and the node's
// zero_copy_send_min_bytes; 0 turns it off). docs/benchmarks.md, "Zero-copy sends", says why.
inline constexpr uint64_t kDefaultZeroCopyMinBytes = 64 * 1024;

// What the zero-copy sends of many sockets did, for metrics (relaxed atomics).
struct ZeroCopyCounters {
  std::atomic<uint64_t> sends{0};  // sends made with MSG_ZEROCOPY
  // Sockets that stopped asking because the kernel copied anyway: on a NIC that should do
  // zero-copy, a count that grows with the connections says it does not.
  std::atomic<uint64_t> copied_off{0};
};

class ZeroCopySends {
 public:
  // `min_bytes`: sends of fewer bytes copy as usual; 0: never zero-copy. `counters` (null:
  // none) add up this socket's sends and its turning off; they must outlive it.
  explicit ZeroCopySends(uint64_t min_bytes, ZeroCopyCounters* counters = nullptr)
      : min_bytes_(min_bytes), counters_(counters) {}

  // The flags to add to a sendmsg of `bytes` on `fd`: MSG_ZEROCOPY or 0. Turns SO_ZEROCOPY on
  // at the first large send (a socket that refuses it, such as a Unix socket, never asks again).
  int FlagsFor(int fd, uint64_t bytes);
  // After a sendmsg with FlagsFor's flags returned >= 0 bytes.
  void Sent(int flags);
  // A sendmsg with MSG_ZEROCOPY failed with ENOBUFS (the error queue is full): reaps, and
  // returns the flags to retry with (0 when reaping freed nothing: copy this one).
  int AfterNoBuffers(int fd);
  // Drains the completions already on `fd`'s error queue without blocking. Returns how many
  // sends they completed.
  uint64_t Reap(int fd);

  // Sends whose completion has not been reaped yet.
  uint64_t outstanding() const { return issued_ - completed_; }
  // True once the kernel said it copied (or the socket refused SO_ZEROCOPY): no more asking.
  bool off() const { return state_ == State::kOff; }
  uint64_t zero_copy_sends() const { return issued_; }

 private:
  enum class State { kUnset, kOn, kOff };
  const uint64_t min_bytes_;
  ZeroCopyCounters* const counters_;
  State state_ = State::kUnset;
  uint64_t issued_ = 0;     // sends made with MSG_ZEROCOPY (the kernel numbers them from 0)
  uint64_t completed_ = 0;  // of which reaped
};

}  // namespace kvpool::rpc
