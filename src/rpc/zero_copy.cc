#include "rpc/zero_copy.h"

// clang-format off
#include <time.h>  // before linux/errqueue.h, which uses struct timespec without it
#include <linux/errqueue.h>
// clang-format on
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

namespace kvpool::rpc {

int ZeroCopySends::FlagsFor(int fd, uint64_t bytes) {
  if (min_bytes_ == 0 || bytes < min_bytes_ || state_ == State::kOff) return 0;
  if (state_ == State::kUnset) {
    const int one = 1;
    state_ =
        setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) == 0 ? State::kOn : State::kOff;
    if (state_ == State::kOff) return 0;
  }
  // Completions left from earlier sends go first: they free option memory, and a COPIED one
  // turns this socket off before it pays again.
  if (outstanding() > 0) Reap(fd);
  return state_ == State::kOn ? MSG_ZEROCOPY : 0;
}

void ZeroCopySends::Sent(int flags) {
  if ((flags & MSG_ZEROCOPY) == 0) return;
  ++issued_;
  if (counters_ != nullptr) counters_->sends.fetch_add(1, std::memory_order_relaxed);
}

int ZeroCopySends::AfterNoBuffers(int fd) {
  return Reap(fd) > 0 && state_ == State::kOn ? MSG_ZEROCOPY : 0;
}

uint64_t ZeroCopySends::Reap(int fd) {
  uint64_t done = 0;
  while (outstanding() > 0) {
    alignas(cmsghdr) char control[128];
    msghdr msg{};
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) break;  // EAGAIN: none yet
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      const bool v4 = c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR;
      const bool v6 = c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR;
      if (!v4 && !v6) continue;
      const auto* err = reinterpret_cast<const sock_extended_err*>(CMSG_DATA(c));
      if (err->ee_errno != 0 || err->ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
      // One completion covers the sends numbered [ee_info, ee_data].
      const uint64_t n = static_cast<uint64_t>(err->ee_data - err->ee_info) + 1;
      done += n;
      completed_ = std::min(issued_, completed_ + n);
      if ((err->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0 && state_ == State::kOn) {
        state_ = State::kOff;
        if (counters_ != nullptr) counters_->copied_off.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  return done;
}

}  // namespace kvpool::rpc
