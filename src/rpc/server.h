// The server side of kvpool's protocol: accepts TCP connections, checks every frame, performs
// the HELLO handshake (with authentication and TLS when configured: docs/security.md) and hands
// each request to a Service. Built on Asio with C++20 coroutines.
//
// Security. With a shared secret (ServerOptions::security.auth_secret) a connection must
// complete the challenge-response of rpc/auth.h right after HELLO; any other frame before that,
// a wrong proof, or a handshake not done within `frame_timeout` closes it with one generic
// ILLEGAL_CLIENT "authentication failed" reply. No request is parsed or handed to the Service
// before then. A peer may prove a tenant's key instead of the secret (rpc/auth.h): it is then
// bound to the tenant it named in HELLO and not privileged (ConnectionContext). With a
// certificate (security.tls_cert) every connection is TLS; with security.tls_verify_client the
// client must present a certificate signed by security.tls_ca.
//
// Protected mode (ServerOptions::protected_mode, as Redis's): with no secret set, a peer on
// another host (its address neither loopback nor the address it connected to, which is what a
// connection from this host to one of its own addresses has) gets an ILLEGAL_CLIENT answer to
// its HELLO that says how to set a secret or to turn protected mode off, and is closed.
//
// Faults it contains: a malformed, truncated, oversized or out-of-order frame, or a frame that
// does not arrive whole within `frame_timeout`, closes that one connection with a log line; the
// server keeps serving every other connection.
//
// Resources before trust (docs/security.md). Every read has a deadline: the handshake (TLS,
// HELLO, AUTH) must end within `handshake_timeout`, a frame's remaining bytes must arrive
// within `frame_timeout` of its first byte, and a connection silent between frames for
// `idle_timeout` is closed. Memory follows the bytes received, not the bytes a header announces:
// metadata is read in chunks into a buffer that grows as they arrive (at most 4 KiB of it
// before the handshake ends; with `read_ahead` a plain TCP connection also holds a fixed 4 KiB
// read-ahead, from its first read). At most `max_handshaking` connections may be in their handshake
// at once: a new one closes the oldest (a peer that completes its handshake in time is never
// shut out by idle ones); at most `max_connections` are open in all, further ones are closed at
// once.
#pragma once

#include <google/protobuf/message_lite.h>

#include <asio.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "common/time.h"
#include "kvpool/status.h"
#include "rpc/frame.h"
#include "rpc/security_options.h"
#include "rpc/zero_copy.h"

namespace asio::ssl {
class context;
}  // namespace asio::ssl

namespace kvpool::rpc {

using IoResult = std::tuple<asio::error_code, size_t>;

// The byte stream of one server connection: plain TCP or TLS. Used by one coroutine at a time.
class ServerStream {
 public:
  virtual ~ServerStream() = default;
  // Reads until every buffer is full (or an error).
  virtual asio::awaitable<IoResult> ReadAll(const std::vector<asio::mutable_buffer>& buffers) = 0;
  // Reads at least one byte (or an error).
  virtual asio::awaitable<IoResult> ReadSome(asio::mutable_buffer buffer) = 0;
  // Writes every buffer (or fails).
  virtual asio::awaitable<IoResult> WriteAll(const std::vector<asio::const_buffer>& buffers) = 0;
  // As WriteAll, zero-copy where the stream can (rpc/zero_copy.h): the buffers' memory must stay
  // unchanged until the peer has read it, not just until this returns. Default: WriteAll.
  virtual asio::awaitable<IoResult> WriteAllZeroCopy(
      const std::vector<asio::const_buffer>& buffers) {
    co_return co_await WriteAll(buffers);
  }
  // Closes the socket; pending operations complete with an error. Safe from a timer handler.
  virtual void Close() = 0;
};

// What the server knows about one connection, for the Service (see Service::HandleFrom).
struct ConnectionContext {
  std::string peer;            // "ip:port"
  std::string peer_name;       // what the client said in HELLO (untrusted, for logs)
  bool authenticated = false;  // proved the shared secret (false when the server has none)
  // A trusted pool component (node, admin tool, embedded host given the pool secret): may name
  // any key and read or write any segment range. True when the server has no secret (nothing
  // can be told apart then) or the peer proved the pool secret itself; false for a peer that
  // proved only a tenant's key (docs/security.md).
  bool privileged = true;
  std::string tenant_id;         // the tenant the connection is bound to; "" is the default tenant
  bool tls = false;              // the connection is TLS
  std::string tls_peer_subject;  // the client certificate's subject (mutual TLS), else ""
  bool from_this_host = true;    // FromThisHost of the socket's two ends
  bool from_loopback = true;     // the peer's address is a loopback address
};

// A request's raw payload, still in the socket. Valid only while Service::Handle runs.
class PayloadReader {
 public:
  PayloadReader(ServerStream& stream, uint64_t size) : stream_(&stream), size_(size) {}
  // Over a bare socket (tests and fuzz targets). `socket` must outlive the reader.
  PayloadReader(asio::ip::tcp::socket& socket, uint64_t size);
  ~PayloadReader();

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
  std::unique_ptr<ServerStream> owned_;  // set by the socket constructor
  ServerStream* stream_;
  uint64_t size_;
  bool consumed_ = false;
  bool failed_ = false;
};

// A reply payload that is still being produced while it is sent (a disk read streamed out as
// its parts land): the server writes each part as soon as it is ready, behind the header that
// announced bytes() in all. Its size is fixed before the first part is ready; a failure found
// later cannot change the reply's status, so the source must say it inside its own bytes (a
// status trailer, transfer/read_trailer.h).
//
// The server never blocks its thread on a source: with pinned connections (ServerOptions) every
// other connection of that thread would wait too. It asks Ready, and while nothing is ready it
// sleeps in the event loop until NotifyReady's call or ReadyBy, whichever comes first.
//
// Threading: Ready, WaitReady, NotifyReady, ReadyBy and Part are called by the one consumer of
// the reply (the sending coroutine, or a reader in the producer's own process); the producer
// works on threads of its own.
class PayloadSource {
 public:
  virtual ~PayloadSource() = default;
  virtual size_t parts() const = 0;
  virtual uint64_t bytes() const = 0;  // the sum of every part's size
  // How many consecutive parts from `from` (< parts()) are ready now; 0: none yet. Never
  // blocks. From ReadyBy(from) on it returns >= 1 (a producer that gave up says so in its
  // bytes).
  virtual size_t Ready(size_t from) = 0;
  // Blocks until part `from` is ready (at the latest ReadyBy(from)), then returns Ready(from).
  virtual size_t WaitReady(size_t from) = 0;
  // When part `from` is ready by then.
  virtual Deadline ReadyBy(size_t from) const = 0;
  // Calls `wake` once, from any thread, when part `from` becomes ready before ReadyBy(from); at
  // once (on the caller's thread) when it already is. A source whose parts become ready only at
  // ReadyBy may never call it. A later call replaces an earlier one not yet made.
  virtual void NotifyReady(size_t from, std::function<void()> wake) = 0;
  // A ready part's bytes, valid while the source lives.
  virtual asio::const_buffer Part(size_t i) const = 0;
};

// What a Service answers. For OK, `meta` is the serialized response message and `payload`
// lists bytes sent after it (they must stay valid until the reply is written, i.e. they should
// point into memory that outlives the server, such as a segment), or `source` produces them
// (then `payload` is empty). For an error, `code` and `message` travel and there is no payload.
struct Reply {
  ErrorCode code = ErrorCode::OK;
  std::string message;
  std::string meta;
  std::vector<asio::const_buffer> payload;
  std::shared_ptr<const void> keep_alive;  // holds what `payload` points into until sent
  std::shared_ptr<PayloadSource> source;   // OK only: a payload streamed as it is produced
  // `payload` points into memory that stays unchanged until the peer has read it (a segment's
  // object under the reader's lease), so it may go out zero-copy (ServerOptions).
  bool payload_stable = false;
  // The peer's next request on this connection is expected within this long (a PUT_END after
  // the writes PUT_START placed): with pinned connections and a nonzero idle_spin, the serving
  // thread keeps polling that long before it sleeps (capped at kMaxSpinMicros), so the request
  // does not pay for waking a halted vCPU. Zero: idle_spin alone.
  std::chrono::microseconds next_request_within{0};
  // The peer's next request on this connection comes no sooner than this (it first moves that
  // many bytes to or from a node): when longer than idle_spin (and no next_request_within),
  // the serving thread sleeps once the reply is out instead of polling. The poll would only
  // burn a CPU the transfer itself needs where there are few (a 2-vCPU VM: docs/benchmarks.md,
  // round 24), and a request that late pays the wake-up anyway. Zero: unknown.
  std::chrono::microseconds next_request_after{0};

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
  // What the server calls: Handle plus who is asking. Override to use the connection's
  // identity (authentication, TLS subject); the default ignores it.
  virtual asio::awaitable<Reply> HandleFrom(const ConnectionContext& context,
                                            const FrameHeader& header, std::string_view meta,
                                            PayloadReader& payload) {
    co_return co_await Handle(header, meta, payload);
  }
};

struct ServerOptions {
  std::string name = "kvpool";   // for logs
  std::string host = "0.0.0.0";  // address to bind
  uint16_t port = 0;             // 0: any free port (see Server::port())
  int threads = 2;               // I/O threads
  // True: each thread runs an io_context of its own and every connection is served by one of
  // them (round robin at accept), so a request never hops between threads. A hop wakes a
  // sleeping thread, which on a VM costs tens of microseconds per small request. False: all
  // threads share one io_context, so one connection's work spreads over every thread.
  bool pin_connections = false;
  // After its last handler, a thread polls for more work this long (yielding the CPU to any
  // other runnable thread between looks) before it sleeps in epoll_wait: a request that comes
  // meanwhile (the next call of a burst: exists, then get) is served without waking a
  // sleeping CPU, which on a VM costs tens to hundreds of microseconds. Zero: sleep at once.
  std::chrono::microseconds idle_spin{0};
  // Replies whose payload is stable (Reply::payload_stable) go zero-copy on plain TCP when at
  // least this large (rpc/zero_copy.h); 0: never.
  uint64_t zero_copy_min_bytes = kDefaultZeroCopyMinBytes;
  // Where the connections' zero-copy sends are counted (null: nowhere); must outlive the server.
  ZeroCopyCounters* zero_copy_counters = nullptr;
  // Plain TCP: a frame's first read takes up to 4 KiB, so a request's header and meta come in
  // one system call (server_streams::PlainStream). Bytes read ahead past the meta are a
  // payload's head and are copied once more on their way to it: off for a server whose requests
  // carry page bytes (a segment host's data port), where no byte of a page may be copied twice.
  bool read_ahead = true;
  FrameLimits limits;
  Clock::duration frame_timeout = std::chrono::seconds(60);      // one frame in and its reply out
  Clock::duration handshake_timeout = std::chrono::seconds(10);  // accept to handshake done
  Clock::duration idle_timeout = std::chrono::minutes(10);       // silence between frames
  size_t max_handshaking = 256;    // connections in their handshake at once (oldest closed)
  size_t max_connections = 16384;  // open connections in all (further ones are closed)
  // Secret (empty: no authentication) and TLS files; see the file comment.
  SecurityOptions security;
  // Without a secret, refuse peers from other hosts (see the file comment). Daemons (master,
  // node) and embedded clients' data servers turn it on unless told to be insecure.
  bool protected_mode = false;
  // With port 0: listen on a free port of [first, last], tried from a random one on (as
  // Mooncake's transfer engine does in 12300-14300, so firewall rules written for it hold),
  // and on any free port when all are taken. {0, 0}: any free port.
  std::pair<uint16_t, uint16_t> port_range{0, 0};
  // How the refusal tells the peer to turn protected mode off, e.g. "start the master with
  // --insecure".
  std::string insecure_hint = "pass --insecure";
};

// True when a connection with these ends comes from this host: the peer is on loopback, or it
// connected from the very address it connected to (the kernel picks that source for a
// connection to one of the host's own addresses). IPv4-mapped IPv6 addresses count as IPv4.
bool FromThisHost(const asio::ip::address& peer, const asio::ip::address& local);

class Server {
 public:
  // `service` must outlive the server.
  Server(ServerOptions options, Service* service);
  ~Server();  // Stop()s
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the I/O threads. Logs a warning when the address is reachable
  // beyond loopback and no secret is set. Errors: RPC_FAIL naming the address when the port is
  // taken or the host is not local; INVALID_PARAMS naming the file when a TLS certificate, key
  // or CA cannot be loaded.
  Status Start();
  // Stops accepting, closes every connection and joins the threads. Idempotent.
  void Stop();
  // The bound port (useful with port 0). Valid after Start().
  uint16_t port() const { return bound_port_; }
  // Open connections, and those of them still in their handshake (for tests and metrics).
  size_t connections() const;
  size_t handshaking() const;

 private:
  struct Slot;
  class SlotLease;
  class Watchdog;
  // A new connection's place, or null when max_connections are open. May close the oldest
  // handshaking connection to make room.
  std::shared_ptr<Slot> Admit(const asio::any_io_executor& executor);
  void Trusted(Slot& slot);  // its handshake is done
  void Leave(Slot& slot);
  Status LoadTls();
  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Accepted(asio::ip::tcp::socket socket);
  asio::awaitable<void> RefusePlain(asio::ip::tcp::socket& socket, const std::string& peer);
  asio::awaitable<void> Serve(ServerStream& stream, ConnectionContext& context, Slot& slot,
                              Watchdog& watchdog);
  // Reads the next frame's header and metadata into `h` and `meta` (see the file comment for
  // the deadlines). False when the connection must end (already logged).
  asio::awaitable<bool> ReadFrame(ServerStream& stream, Watchdog& watchdog, bool handshaking,
                                  const std::string& peer, FrameHeader& h, std::string& meta);
  asio::awaitable<bool> Greet(ServerStream& stream, const FrameHeader& h, const std::string& meta,
                              ConnectionContext& context, std::string& server_nonce,
                              std::string& client_nonce, std::string& proof_key);
  asio::awaitable<bool> CheckAuth(ServerStream& stream, const FrameHeader& h,
                                  const std::string& meta, ConnectionContext& context,
                                  const std::string& server_nonce, const std::string& client_nonce,
                                  const std::string& proof_key);
  asio::awaitable<bool> SendReply(ServerStream& stream, const FrameHeader& request,
                                  const Reply& reply);
  // What `reply` says of the peer's next request (next_request_within, next_request_after),
  // applied to the poll of the thread that runs `ex` (a connection's pinned context). No-op
  // without pin_connections or idle_spin. Call on that thread, after the reply is sent.
  void PlanPoll(const asio::any_io_executor& ex, const Reply& reply);

  ServerOptions options_;
  std::unique_ptr<asio::ssl::context> tls_;  // set by Start when security.tls_server()
  Service* service_;
  // Before ios_: connections still running when ios_ is destroyed leave the table.
  mutable std::mutex slots_mu_;
  std::list<std::shared_ptr<Slot>> handshaking_;  // oldest first; guarded by slots_mu_
  size_t connections_ = 0;                        // guarded by slots_mu_
  // One io_context (shared by every thread), or one per thread with pin_connections.
  std::vector<std::unique_ptr<asio::io_context>> ios_;
  size_t next_io_ = 0;  // the context the next accepted connection is served by
  // Per pinned context: what its replies said of the next requests (PlanPoll). Written and
  // read by that context's thread only (atomic for the tests' sake; relaxed).
  struct PollPlan {
    std::atomic<Deadline> until{};   // poll until then (Reply::next_request_within)
    std::atomic<bool> sleep{false};  // end the idle poll now (Reply::next_request_after)
  };
  std::unique_ptr<PollPlan[]> poll_plans_;
  // The accept loop and Stop's close of the acceptor run here: without pinning, several
  // threads run ios_.front(), and a close on one raced the loop's next accept on another.
  asio::strand<asio::io_context::executor_type> accept_strand_;
  asio::ip::tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopped_{false};
  uint16_t bound_port_ = 0;
};

}  // namespace kvpool::rpc
