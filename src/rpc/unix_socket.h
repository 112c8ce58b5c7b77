// Unix domain stream sockets for kvpool's local attach protocol (a standalone client and the
// `kvpool node` on the same host). They carry the same frames as TCP (rpc/frame.h) but never a
// payload: page bytes move through shared memory, and file descriptors (memfds) travel with
// SCM_RIGHTS attached to a frame's first byte.
//
// Socket names: "@name" is Linux's abstract namespace (no file, nothing to clean up; scoped to
// the network namespace), anything else is a filesystem path.
//
// Every wait has a deadline; all sockets here are non-blocking and close-on-exec. Functions are
// thread-compatible: one thread per socket at a time.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "kvpool/status.h"
#include "rpc/frame.h"
#include "rpc/unique_fd.h"

namespace kvpool::rpc {

// At most this many descriptors ride on one frame; more is a protocol violation.
inline constexpr size_t kMaxFdsPerFrame = 4;

// The limits of a local frame: no payload at all, metadata as for TCP.
FrameLimits UnixFrameLimits();

// Listens on `name`. A filesystem path left by a dead process is unlinked first (a live
// listener there is detected and refused).
// Errors: INVALID_PARAMS (empty or over-long name), RPC_FAIL (in use, no permission).
Result<UniqueFd> ListenUnix(const std::string& name, int backlog = 128);

// Connects to `name` before `deadline`.
// Errors: RPC_FAIL (nobody listens there: the message names the socket), RPC_TIMEOUT,
// INVALID_PARAMS (bad name).
Result<UniqueFd> ConnectUnix(const std::string& name, Deadline deadline);

// Accepts one pending connection (non-blocking; invalid fd when none is pending).
UniqueFd AcceptUnix(int listen_fd);

// Sends one frame (header + meta) with `fds` attached. The descriptors stay owned by the caller
// (the receiver gets duplicates).
// Errors: RPC_FAIL (peer gone), RPC_TIMEOUT, INVALID_PARAMS (too many fds, payload_len != 0).
Status SendUnixFrame(int fd, const FrameHeader& header, std::string_view meta,
                     std::span<const int> fds, Deadline deadline);

struct UnixFrame {
  FrameHeader header;
  std::string meta;
  std::vector<UniqueFd> fds;  // received descriptors, owned
};

// Receives one whole frame before `deadline`. Received descriptors are owned by `out` (and
// closed with it, also on error).
// Errors: RPC_FAIL (peer closed or I/O error; "closed" in the message when it closed cleanly
// between frames), RPC_TIMEOUT, INVALID_PARAMS (bad magic, oversized meta, any payload, more
// than kMaxFdsPerFrame descriptors or truncated control data).
Status RecvUnixFrame(int fd, const FrameLimits& limits, Deadline deadline, UnixFrame* out);

// Receives one frame from a non-blocking socket in as many pieces as it arrives, never waiting:
// a server reads what is there, goes back to its event loop, and calls again when the socket is
// readable (its own deadline bounds the whole frame). Metadata memory grows with the bytes that
// arrived, never by what the header announces. Thread-compatible.
class UnixFrameReader {
 public:
  // Reads what is available. True once the whole frame is in frame() (then Reset() before the
  // next one); false when more must arrive. Errors as RecvUnixFrame, checked against `limits`.
  Result<bool> ReadAvailable(int fd, const FrameLimits& limits);
  // Some bytes of a frame have arrived (its deadline should run).
  bool started() const { return header_got_ > 0; }
  UnixFrame& frame() { return frame_; }
  void Reset();

 private:
  UnixFrame frame_;
  uint8_t header_[kFrameHeaderBytes];
  size_t header_got_ = 0;
  bool header_done_ = false;
  size_t meta_got_ = 0;
};

// Waits until `fd` is readable (or hung up) for at most `timeout`; false when it is not.
bool WaitReadable(int fd, Clock::duration timeout);

// The pid and uid of the peer (SO_PEERCRED); {-1, -1} when unavailable.
struct PeerCredentials {
  int pid = -1;
  int uid = -1;
};
PeerCredentials PeerOf(int fd);

}  // namespace kvpool::rpc
