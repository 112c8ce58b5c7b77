// The client side of one kvpool connection: blocking calls with a deadline on every wait.
//
// A Connection is used by one thread at a time (not thread-safe); ConnectionPool hands them out.
// After any I/O error or timeout the connection is broken (a frame may be half sent) and
// Call() fails fast with RPC_FAIL; the pool then drops it.
//
// Security (docs/security.md): with ConnectOptions::auth_secret the handshake proves the secret
// both ways (rpc/auth.h); with ConnectOptions::tls the bytes go through TLS. Without TLS, page
// bytes move with writev/readv straight from and to the caller's memory.
#pragma once

#include <google/protobuf/message_lite.h>
#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "common/time.h"
#include "kvpool/status.h"
#include "rpc/endpoint.h"
#include "rpc/frame.h"
#include "rpc/kvpool.pb.h"
#include "rpc/tls_client.h"
#include "rpc/zero_copy.h"

typedef struct ssl_st SSL;

namespace kvpool::rpc {

struct ConnectOptions {
  FrameLimits limits;
  // Shared secret proven in the handshake. Empty: none (a server that has one refuses).
  std::string auth_secret;
  // The tenant the connection acts for, sent in HELLO ("" or "default": the default tenant).
  std::string tenant_id;
  // True when `auth_secret` is the tenant key of `tenant_id` rather than the pool secret.
  bool tenant_key = false;
  // TLS context; null: plain TCP.
  std::shared_ptr<TlsClientContext> tls;
  // How long a call polls for its reply (once it has found none there) before it sleeps in
  // poll(): common/spin_wait.h says why. A thread
  // that sleeps gives its CPU back, and on a VM waking a halted CPU costs tens of
  // microseconds, which is most of a small call's round trip (exists: docs/benchmarks.md).
  // The poll yields the CPU to any other runnable thread between looks. 0: sleep at once.
  std::chrono::microseconds reply_spin{100};
  // Request payload sends of at least this many bytes go zero-copy (rpc/zero_copy.h) on plain
  // TCP; 0: never. The memory sent must stay unchanged until the call returns, as it must
  // anyway.
  uint64_t zero_copy_min_bytes = kDefaultZeroCopyMinBytes;
};

// A request payload sent in pieces, with a call before each (see Connection::Call).
struct PayloadPieces {
  // Where each piece starts, in bytes of the payload: ascending, marks[0] == 0. Piece k is
  // bytes [marks[k], marks[k + 1]), the last one runs to the end.
  std::span<const uint64_t> marks;
  // Called with k right before any byte of piece k is sent (after every byte of the pieces
  // before it), on the calling thread.
  const std::function<void(size_t piece)>* before = nullptr;
};

class Connection {
 public:
  // Connects to `endpoint` and performs the handshake (TLS, HELLO, authentication) before
  // `deadline`. Errors: RPC_TIMEOUT (deadline passed), RPC_FAIL (refused, unreachable, reset,
  // TLS handshake or certificate failure, a server without TLS), INVALID_VERSION (peer speaks
  // another protocol version), INVALID_PARAMS (bad endpoint), ILLEGAL_CLIENT (authentication
  // failed either way: wrong or missing secret on one side), UNAVAILABLE_IN_CURRENT_MODE (the
  // server requires TLS and `options` has none).
  static Result<std::unique_ptr<Connection>> Connect(const Endpoint& endpoint,
                                                     const std::string& peer_name,
                                                     Deadline deadline,
                                                     const ConnectOptions& options = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends `method` with `request` and `request_payload` (gathered straight from the caller's
  // memory, no copy), then waits for the response. A response payload is scattered straight
  // into `response_payload`, whose total length must equal the payload the peer sends (else
  // TRANSFER_FAIL and the connection breaks). On an OK status `response` is filled.
  // Errors: the peer's code and message for a non-OK response; RPC_TIMEOUT; RPC_FAIL.
  // The memory behind the iovecs must stay valid until Call returns.
  // `pieces` (null: none) sends the request payload piece by piece, calling pieces->before
  // ahead of each; a send that fails stops before the pieces after it.
  Status Call(Method method, const google::protobuf::MessageLite& request,
              google::protobuf::MessageLite* response, std::span<const iovec> request_payload,
              std::span<const iovec> response_payload, Deadline deadline,
              const PayloadPieces* pieces = nullptr);

  Status Call(Method method, const google::protobuf::MessageLite& request,
              google::protobuf::MessageLite* response, Deadline deadline) {
    return Call(method, request, response, {}, {}, deadline);
  }

  bool broken() const { return fd_ < 0; }
  // Sends made zero-copy on this connection so far, and whether it stopped asking (the kernel
  // copied anyway: loopback, veth, a device without scatter-gather).
  uint64_t zero_copy_sends() const { return zero_copy_.zero_copy_sends(); }
  bool zero_copy_off() const { return zero_copy_.off(); }
  // False when the peer has closed the connection (checked without blocking). Used by the pool
  // before reusing an idle connection.
  bool StillOpen() const;
  const Endpoint& endpoint() const { return endpoint_; }

  // Calls from now on fail with RPC_TIMEOUT ("made no progress") when the socket stays neither
  // readable nor writable for `stall` while they wait, even if their deadline is later: a peer
  // cut off by a partition answers nothing, and a caller with another replica to read should
  // not wait out its whole deadline. Zero (the default): only the deadline bounds a wait. Not
  // thread-safe, like every method: set it on a connection on loan.
  void set_stall_timeout(Clock::duration stall) { stall_ = stall; }

 private:
  Connection(int fd, Endpoint endpoint, const ConnectOptions& options);
  Status StartTls(TlsClientContext& tls, Deadline deadline);
  Status Authenticate(const ConnectOptions& options, const std::string& client_nonce,
                      const HelloReply& reply, Deadline deadline);
  Status MoveAll(std::span<iovec> iov, Deadline deadline, bool send);
  Status MoveAllTls(std::span<iovec> iov, Deadline deadline, bool send);
  // Sends `out`: its first `head` iovecs (frame header and meta) with the first piece, then the
  // payload after them piece by piece (see PayloadPieces).
  Status SendInPieces(std::span<iovec> out, size_t head, const PayloadPieces& pieces,
                      Deadline deadline);
  Status Fail(Status st);  // closes the socket, returns st
  // The wait of a read that found nothing: polls for up to what is left of `spin_budget_`
  // (then spent), then sleeps in poll() until `deadline`.
  Status WaitToRead(Deadline deadline);
  // Reads a reply's frame header into `header` (kFrameHeaderBytes) and, in the same reads,
  // what has come of the bytes after it into `ahead` (up to its size; `*ahead_len` says how
  // many): a small reply that is there takes one system call instead of a look and two reads.
  // Only for a reply that carries no payload, so that every byte read belongs to it. Polls as
  // WaitToRead does, with the read itself.
  Status ReadReplyHead(uint8_t* header, std::string& ahead, size_t* ahead_len, Deadline deadline);
  // Waits for `events` until `deadline`, or until stall_ passes without them (see
  // set_stall_timeout).
  Status WaitReady(short events, Deadline deadline);

  int fd_;
  SSL* ssl_ = nullptr;  // owned; set when the connection is TLS
  Endpoint endpoint_;
  FrameLimits limits_;
  uint64_t next_request_id_ = 1;
  std::chrono::microseconds reply_spin_;
  std::chrono::microseconds spin_budget_{0};  // reply_spin_ while a call awaits its reply
  // Bytes of a payload-less reply's meta read with its header (ReadReplyHead): most control
  // replies fit.
  static constexpr size_t kReplyReadAhead = 4096;
  std::string meta_buf_;      // reused between calls
  Clock::duration stall_{0};  // see set_stall_timeout
  ZeroCopySends zero_copy_;   // this socket's zero-copy sends (plain TCP only)
};

}  // namespace kvpool::rpc
