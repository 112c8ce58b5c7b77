#include "rpc/unix_connection.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <cerrno>

namespace kvpool::rpc {

Result<std::unique_ptr<UnixConnection>> UnixConnection::Connect(const std::string& socket_name,
                                                                const std::string& peer_name,
                                                                Deadline deadline) {
  auto fd = ConnectUnix(socket_name, deadline);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<UnixConnection> conn(new UnixConnection(std::move(fd).value(), socket_name));
  Hello hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_peer_name(peer_name);
  HelloReply reply;
  KVPOOL_RETURN_IF_ERROR(conn->Call(HELLO, hello, &reply, deadline));
  return conn;
}

Status UnixConnection::Fail(Status st) {
  fd_.reset();
  return st;
}

bool UnixConnection::StillOpen() const {
  if (!fd_.valid()) return false;
  char c;
  ssize_t n = ::recv(fd_.get(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

Status UnixConnection::Call(Method method, const google::protobuf::MessageLite& request,
                            google::protobuf::MessageLite* response, Deadline deadline,
                            std::span<const int> fds) {
  if (!fd_.valid()) {
    return Status(ErrorCode::RPC_FAIL,
                  fmt::format("connection to kvpool node at {} is broken", socket_name_));
  }
  meta_buf_.clear();
  request.AppendToString(&meta_buf_);
  FrameHeader h;
  h.method = static_cast<uint16_t>(method);
  h.request_id = next_request_id_++;
  h.meta_len = static_cast<uint32_t>(meta_buf_.size());
  Status st = SendUnixFrame(fd_.get(), h, meta_buf_, fds, deadline);
  if (!st.ok()) return Fail(Status(st.code(), socket_name_ + ": " + st.message()));

  UnixFrame in;
  st = RecvUnixFrame(fd_.get(), UnixFrameLimits(), deadline, &in);
  if (!st.ok()) {
    if (st.code() == ErrorCode::INVALID_PARAMS) st = Status(ErrorCode::RPC_FAIL, st.message());
    return Fail(
        Status(st.code(), fmt::format("kvpool node at {}: {}", socket_name_, st.message())));
  }
  const FrameHeader& rh = in.header;
  if (!rh.is_response() || rh.base_method() != h.method || rh.request_id != h.request_id ||
      !in.fds.empty()) {
    return Fail(Status(ErrorCode::RPC_FAIL,
                       fmt::format("kvpool node at {} answered request {} method {} out of turn",
                                   socket_name_, h.request_id, h.method)));
  }
  if (rh.status != 0) {
    ErrorInfo info;
    info.ParseFromString(in.meta);
    return Status(ErrorCodeFromInt(rh.status), info.message());
  }
  if (response != nullptr && !response->ParseFromString(in.meta)) {
    return Fail(Status(ErrorCode::RPC_FAIL,
                       fmt::format("unparsable response from kvpool node at {}", socket_name_)));
  }
  return Status::Ok();
}

}  // namespace kvpool::rpc
