// The receive low-water mark (SO_RCVLOWAT) of one TCP socket while a large payload comes in.
//
// Why: a receiver that waits for readiness (epoll, poll) is woken for every segment that
// arrives, reads the little that is there and sleeps again. With the mark at 1 MiB it is woken
// once a MiB is queued and reads it in one call: a node receiving a put's payload wakes a
// fraction as often, and on loopback, where the sender's CPU also runs the receiver's TCP
// processing and wake-ups, a put of 256 KiB pages moves 13-17 % faster (docs/benchmarks.md,
// "Fewer wake-ups per received payload"). The mark only changes when readiness is reported; a
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
  // Payloads smaller than 2 marks keep the default (1 byte): there is nothing to save.
  static constexpr uint64_t kMark = uint64_t{1} << 20;

  // `fd`: a TCP socket (any other kind ignores the option). `total`: the payload's length.
  ReceiveLowWater(int fd, uint64_t total) : fd_(total >= 2 * kMark ? fd : -1) {}
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
