// The client side of one kvpool connection: blocking calls with a deadline on every wait.
//
// A Connection is used by one thread at a time (not thread-safe); ConnectionPool hands them out.
// After any I/O error or timeout the connection is broken (a frame may be half sent) and
// Call() fails fast with RPC_FAIL; the pool then drops it.
#pragma once

#include <google/protobuf/message_lite.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/time.h"
#include "kvpool/status.h"
#include "rpc/endpoint.h"
#include "rpc/frame.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::rpc {

class Connection {
 public:
  // Connects to `endpoint` and performs the HELLO handshake before `deadline`.
  // Errors: RPC_TIMEOUT (deadline passed), RPC_FAIL (refused, unreachable, reset),
  // INVALID_VERSION (peer speaks another protocol version), INVALID_PARAMS (bad endpoint).
  static Result<std::unique_ptr<Connection>> Connect(const Endpoint& endpoint,
                                                     const std::string& peer_name,
                                                     Deadline deadline,
                                                     FrameLimits limits = FrameLimits());
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends `method` with `request` and `request_payload` (gathered straight from the caller's
  // memory, no copy), then waits for the response. A response payload is scattered straight
  // into `response_payload`, whose total length must equal the payload the peer sends (else
  // TRANSFER_FAIL and the connection breaks). On an OK status `response` is filled.
  // Errors: the peer's code and message for a non-OK response; RPC_TIMEOUT; RPC_FAIL.
  // The memory behind the iovecs must stay valid until Call returns.
  Status Call(Method method, const google::protobuf::MessageLite& request,
              google::protobuf::MessageLite* response, std::span<const iovec> request_payload,
              std::span<const iovec> response_payload, Deadline deadline);

  Status Call(Method method, const google::protobuf::MessageLite& request,
              google::protobuf::MessageLite* response, Deadline deadline) {
    return Call(method, request, response, {}, {}, deadline);
  }

  bool broken() const { return fd_ < 0; }
  // False when the peer has closed the connection (checked without blocking). Used by the pool
  // before reusing an idle connection.
  bool StillOpen() const;
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  Connection(int fd, Endpoint endpoint, FrameLimits limits);
  Status MoveAll(std::span<iovec> iov, Deadline deadline, bool send);
  Status Fail(Status st);  // closes the socket, returns st

  int fd_;
  Endpoint endpoint_;
  FrameLimits limits_;
  uint64_t next_request_id_ = 1;
  std::string meta_buf_;  // reused between calls
};

}  // namespace kvpool::rpc
