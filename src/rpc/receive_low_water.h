// The receive low-water mark (SO_RCVLOWAT) of one TCP socket while a large payload comes in.
//
// Why: a receiver that waits for readiness (epoll, poll) is woken for every segment that
// arrives, reads the little that is there and sleeps again. With the mark at 1 MiB it is woken
// once a MiB is queued and reads it in one call: a node receiving a put's payload wakes a
// fraction as often, and on loopback, where the sender's CPU also runs the receiver's TCP
// processing and wake-ups, a put of 256 KiB pages moves 13-17 % faster (docs/benchmarks.md,
// "Fewer wake-ups per received payload"). Payloads from 256 KiB on are read this way; a
// reply's reader keeps a lower mark below 2 MiB (ForReply). The mark only changes when
// readiness is reported; a non-blocking read still returns whatever has arrived, and the mark
// never exceeds what is left to read, so the last bytes wake the receiver as soon as they are
// all there. The kernel caps it at half the socket's largest receive buffer.
//
// Threading: not thread-safe; used by the socket's reader, for the length of one payload.
#pragma once

#include <sys/socket.h>

#include <algorithm>
#include <cstdint>

namespace kvpool::rpc {

class ReceiveLowWater {
 public:
  static constexpr uint64_t kMark = uint64_t{1} << 20;
  // Payloads smaller than this keep the default (1 byte).
  static constexpr uint64_t kMinPayload = uint64_t{256} << 10;
  // A reply's reader (the client of a get) copies what has arrived while the rest is still
  // being sent: below this size its mark stays at kMinPayload, so a 1 MiB reply still comes out
  // in four reads that overlap the send (a mark of the whole MiB cost gets of 4 x 256 KiB a
  // fifth of their speed; one of 256 KiB made them ~8 % faster: docs/benchmarks.md, "One
  // wake-up per put payload").
  static constexpr uint64_t kSmallReplyPayload = 2 * kMark;

  // For the reader of a request's payload (a node taking a put's bytes): it answers only once
  // all of it is in, so it is woken for the whole payload up to kMark at a time.
  // `fd`: a TCP socket (any other kind ignores the option). `total`: the payload's length.
  static ReceiveLowWater ForRequest(int fd, uint64_t total) {
    return ReceiveLowWater(total >= kMinPayload ? fd : -1, kMark);
  }
  // For the reader of a reply's payload (a client taking a get's bytes); see kSmallReplyPayload.
  static ReceiveLowWater ForReply(int fd, uint64_t total) {
    return ReceiveLowWater(total >= kMinPayload ? fd : -1,
                           total >= kSmallReplyPayload ? kMark : kMinPayload);
  }
  ~ReceiveLowWater() { Set(1); }
  ReceiveLowWater(const ReceiveLowWater&) = delete;
  ReceiveLowWater& operator=(const ReceiveLowWater&) = delete;

  // False for a payload too small for a mark (or a socket forgotten): the reader may read it
  // the plain way.
  bool active() const { return fd_ >= 0; }

  // The socket was closed meanwhile (its descriptor may already name another): leave it be.
  void Forget() { fd_ = -1; }

  // Before waiting for readiness with `left` bytes of the payload still to read.
  void Before(uint64_t left) { Set(static_cast<int>(std::clamp<uint64_t>(left, 1, cap_))); }

 private:
  void Set(int mark) {
    if (fd_ < 0 || mark == mark_) return;
    setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &mark, sizeof(mark));
    mark_ = mark;
  }

  ReceiveLowWater(int fd, uint64_t cap) : fd_(fd), cap_(cap) {}

  int fd_;        // -1: a small payload, or a socket closed under it: nothing to do
  uint64_t cap_;  // the highest mark asked for
  int mark_ = 1;
};

}  // namespace kvpool::rpc
