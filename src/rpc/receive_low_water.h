// The receive low-water mark (SO_RCVLOWAT) of one TCP socket while a large payload comes in.
//
// Why: a receiver that waits for readiness (epoll, poll) is woken for every segment that
// arrives, reads the little that is there and sleeps again. With the mark at 1 MiB it is woken
// once a MiB is queued and reads it in one call: a node receiving a put's payload wakes a
// fraction as often, and on loopback, where the sender's CPU also runs the receiver's TCP
// processing and wake-ups, a put of 256 KiB pages moves 13-17 % faster (docs/benchmarks.md,
// "Fewer wake-ups per received payload"). A request's payload (a put's, at a node) is read
// this way from 256 KiB on, a reply's (a get's, at a client) from 2 MiB: see the two minima
// below. The mark only changes when readiness is reported; a
// non-blocking read still returns whatever has arrived, and the mark never exceeds what is left
// to read, so the last bytes wake the receiver as soon as they are all there. The kernel caps it
// at half the socket's largest receive buffer.
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
  // Payloads smaller than this keep the default (1 byte). A reply's reader (the client of a
  // get) copies what has arrived while the rest is still being sent, which a mark would stop:
  // from 2 marks on there is little overlap to lose.
  static constexpr uint64_t kMinReplyPayload = 2 * kMark;
  // A request's reader (a node taking a put's payload) answers only once all of it is in, so
  // being woken once for the whole payload costs it nothing: with payloads from 256 KiB on
  // the node takes a 4 x 256 KiB put in fewer reads and wake-ups (docs/benchmarks.md, "One
  // wake-up per put payload").
  static constexpr uint64_t kMinRequestPayload = uint64_t{256} << 10;

  // `fd`: a TCP socket (any other kind ignores the option). `total`: the payload's length.
  // Payloads under `min_payload` keep the default.
  ReceiveLowWater(int fd, uint64_t total, uint64_t min_payload = kMinReplyPayload)
      : fd_(total >= min_payload ? fd : -1) {}
  ~ReceiveLowWater() { Set(1); }
  ReceiveLowWater(const ReceiveLowWater&) = delete;
  ReceiveLowWater& operator=(const ReceiveLowWater&) = delete;

  // The socket was closed meanwhile (its descriptor may already name another): leave it be.
  void Forget() { fd_ = -1; }

  // Before waiting for readiness with `left` bytes of the payload still to read.
  void Before(uint64_t left) { Set(static_cast<int>(std::clamp<uint64_t>(left, 1, kMark))); }

 private:
  void Set(int mark) {
    if (fd_ < 0 || mark == mark_) return;
    setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &mark, sizeof(mark));
    mark_ = mark;
  }

  int fd_;  // -1: a small payload, or a socket closed under it: nothing to do
  int mark_ = 1;
};

}  // namespace kvpool::rpc
