// The client side of one local (Unix socket) connection: blocking calls with a deadline on every
// wait, descriptors passed alongside a request. Counterpart of rpc::Connection for the attach
// protocol between a standalone client and its `kvpool node`.
//
// Used by one thread at a time (not thread-safe). After an I/O error or a timeout the connection
// is broken (a frame may be half sent) and Call() fails fast with RPC_FAIL.
#pragma once

#include <google/protobuf/message_lite.h>

#include <memory>
#include <span>
#include <string>

#include "common/time.h"
#include "kvpool/status.h"
#include "rpc/kvpool.pb.h"
#include "rpc/unix_socket.h"

namespace kvpool::rpc {

class UnixConnection {
 public:
  // Connects to `socket_name` ("@abstract" or a path) and performs the HELLO handshake before
  // `deadline`. Errors: RPC_FAIL (nobody listening), RPC_TIMEOUT, INVALID_VERSION,
  // INVALID_PARAMS (bad name).
  static Result<std::unique_ptr<UnixConnection>> Connect(const std::string& socket_name,
                                                         const std::string& peer_name,
                                                         Deadline deadline);

  // Sends `method` with `request` and `fds` (the caller keeps its descriptors), waits for the
  // response and parses it into `response` (may be null). Errors: the peer's code and message
  // for a non-OK response (the connection stays usable); RPC_TIMEOUT and RPC_FAIL (broken).
  Status Call(Method method, const google::protobuf::MessageLite& request,
              google::protobuf::MessageLite* response, Deadline deadline,
              std::span<const int> fds = {});

  bool broken() const { return !fd_.valid(); }
  // False when the peer closed the connection or sent something unasked (checked without
  // blocking); used before reusing an idle connection.
  bool StillOpen() const;
  const std::string& socket_name() const { return socket_name_; }

 private:
  UnixConnection(UniqueFd fd, std::string socket_name)
      : fd_(std::move(fd)), socket_name_(std::move(socket_name)) {}
  Status Fail(Status st);

  UniqueFd fd_;
  std::string socket_name_;
  uint64_t next_request_id_ = 1;
  std::string meta_buf_;
};

}  // namespace kvpool::rpc
