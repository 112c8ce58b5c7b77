// The server side of kvpool's protocol: accepts TCP connections, checks every frame, performs
// the HELLO handshake and hands each request to a Service. Built on Asio with C++20 coroutines.
//
// Faults it contains: a malformed, truncated, oversized or out-of-order frame, or a frame that
// does not arrive whole within `frame_timeout`, closes that one connection with a log line; the
// server keeps serving every other connection.
#pragma once

#include <google/protobuf/message_lite.h>

#include <asio.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/time.h"
#include "kvpool/status.h"
#include "rpc/frame.h"

namespace kvpool::rpc {

// A request's raw payload, still in the socket. Valid only while Service::Handle runs.
class PayloadReader {
 public:
  PayloadReader(asio::ip::tcp::socket& socket, uint64_t size) : socket_(socket), size_(size) {}

  uint64_t size() const { return size_; }
  bool consumed() const { return consumed_; }
  bool failed() const { return failed_; }

  // Reads the whole payload straight into `buffers`, whose total size must equal size().
  // Errors: INVALID_PARAMS on a size mismatch (nothing is read); TRANSFER_FAIL when the peer
  // stops sending (the connection is then closed by the server).
  asio::awaitable<Status> ReadInto(std::vector<asio::mutable_buffer> buffers);
  // Reads and drops the payload (a refused request still has its bytes on the wire).
  asio::awaitable<Status> Discard();

 private:
  asio::ip::tcp::socket& socket_;
  uint64_t size_;
  bool consumed_ = false;
  bool failed_ = false;
};

// What a Service answers. For OK, `meta` is the serialized response message and `payload`
// lists bytes sent after it (they must stay valid until the reply is written, i.e. they should
// point into memory that outlives the server, such as a segment). For an error, `code` and
// `message` travel and there is no payload.
struct Reply {
  ErrorCode code = ErrorCode::OK;
  std::string message;
  std::string meta;
  std::vector<asio::const_buffer> payload;
  std::shared_ptr<const void> keep_alive;  // holds what `payload` points into until sent

  static Reply Of(const google::protobuf::MessageLite& msg);
  static Reply Error(const Status& st);
};

class Service {
 public:
  virtual ~Service() = default;
  // Handles one request (base method, version already checked). Many run concurrently on the
  // server's threads; implementations are thread-safe. An unread payload is discarded after.
  virtual asio::awaitable<Reply> Handle(const FrameHeader& header, std::string_view meta,
                                        PayloadReader& payload) = 0;
};

struct ServerOptions {
  std::string name = "kvpool";   // for logs
  std::string host = "0.0.0.0";  // address to bind
  uint16_t port = 0;             // 0: any free port (see Server::port())
  int threads = 2;               // I/O threads
  FrameLimits limits;
  Clock::duration frame_timeout = std::chrono::seconds(60);  // one frame in and its reply out
};

class Server {
 public:
  // `service` must outlive the server.
  Server(ServerOptions options, Service* service);
  ~Server();  // Stop()s
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the I/O threads. Errors: RPC_FAIL naming the address when the
  // port is taken or the host is not local.
  Status Start();
  // Stops accepting, closes every connection and joins the threads. Idempotent.
  void Stop();
  // The bound port (useful with port 0). Valid after Start().
  uint16_t port() const { return bound_port_; }

 private:
  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Serve(asio::ip::tcp::socket socket);
  asio::awaitable<bool> Handshake(asio::ip::tcp::socket& socket, const FrameHeader& h,
                                  const std::string& meta, const std::string& peer);
  asio::awaitable<bool> SendReply(asio::ip::tcp::socket& socket, const FrameHeader& request,
                                  const Reply& reply);

  ServerOptions options_;
  Service* service_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopped_{false};
  uint16_t bound_port_ = 0;
};

}  // namespace kvpool::rpc
