#include "rpc/connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/sockios.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "common/spin_wait.h"
#include "rpc/auth.h"
#include "rpc/receive_low_water.h"

namespace kvpool::rpc {
namespace {

// Waits until fd is ready for `events` or the deadline passes.
Status WaitFd(int fd, short events, Deadline deadline, const Endpoint& ep) {
  for (;;) {
    int64_t left = MillisLeft(deadline);
    if (left <= 0) {
      return Status(ErrorCode::RPC_TIMEOUT,
                    fmt::format("deadline passed talking to {}", ep.ToString()));
    }
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) {
      return Status(ErrorCode::RPC_FAIL,
                    fmt::format("poll on {}: {}", ep.ToString(), strerror(errno)));
    }
  }
}

void SetSocketOptions(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

Result<int> ConnectSocket(const Endpoint& ep, Deadline deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int gai = getaddrinfo(ep.host.c_str(), std::to_string(ep.port).c_str(), &hints, &res);
  if (gai != 0) {
    return Status(ErrorCode::RPC_FAIL,
                  fmt::format("cannot resolve {}: {}", ep.ToString(), gai_strerror(gai)));
  }
  Status last(ErrorCode::RPC_FAIL, fmt::format("no address for {}", ep.ToString()));
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      last = WaitFd(fd, POLLOUT, deadline, ep);
      if (last.ok()) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      }
    }
    if (rc == 0) {
      freeaddrinfo(res);
      SetSocketOptions(fd);
      return fd;
    }
    if (last.ok() || last.code() != ErrorCode::RPC_TIMEOUT) {
      last = Status(ErrorCode::RPC_FAIL,
                    fmt::format("cannot connect to {}: {}", ep.ToString(), strerror(errno)));
    }
    ::close(fd);
  }
  freeaddrinfo(res);
  return last;
}

// Bytes sent on `fd` that the peer has not acknowledged yet (SIOCOUTQ), or -1.
int UnackedBytes(int fd) {
  int n = 0;
  return ::ioctl(fd, SIOCOUTQ, &n) == 0 ? n : -1;
}

// Bytes received on `fd` and not read yet (SIOCINQ), or -1.
int QueuedBytes(int fd) {
  int n = 0;
  return ::ioctl(fd, SIOCINQ, &n) == 0 ? n : -1;
}

size_t TotalLength(std::span<const iovec> iov) {
  size_t n = 0;
  for (const auto& v : iov) n += v.iov_len;
  return n;
}

}  // namespace

Connection::Connection(int fd, Endpoint endpoint, const ConnectOptions& options)
    : fd_(fd),
      endpoint_(std::move(endpoint)),
      limits_(options.limits),
      reply_spin_(options.reply_spin),
      zero_copy_(options.tls != nullptr ? 0 : options.zero_copy_min_bytes) {}

Connection::~Connection() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<Connection>> Connection::Connect(const Endpoint& endpoint,
                                                        const std::string& peer_name,
                                                        Deadline deadline,
                                                        const ConnectOptions& options) {
  auto fd = ConnectSocket(endpoint, deadline);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<Connection> conn(new Connection(*fd, endpoint, options));
  if (options.tls != nullptr) KVPOOL_RETURN_IF_ERROR(conn->StartTls(*options.tls, deadline));
  Hello hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_peer_name(peer_name);
  hello.set_tenant_id(options.tenant_id);
  hello.set_key_kind(options.tenant_key ? TENANT_KEY : POOL_SECRET);
  std::string client_nonce;
  if (!options.auth_secret.empty()) {
    client_nonce = MakeAuthNonce();
    hello.set_client_nonce(client_nonce);
  }
  HelloReply reply;
  Status st = conn->Call(HELLO, hello, &reply, deadline);
  if (!st.ok()) return st;
  if (!options.auth_secret.empty()) {
    KVPOOL_RETURN_IF_ERROR(conn->Authenticate(options, client_nonce, reply, deadline));
  } else if (!reply.server_nonce().empty()) {
    return conn->Fail(
        Status(ErrorCode::ILLEGAL_CLIENT,
               fmt::format("{} requires authentication: set --auth_secret_file or ${}",
                           endpoint.ToString(), kAuthSecretEnv)));
  }
  return conn;
}

// Mutual: the server proves the secret first (a server without it cannot), then the client.
Status Connection::Authenticate(const ConnectOptions& options, const std::string& client_nonce,
                                const HelloReply& reply, Deadline deadline) {
  const std::string& secret = options.auth_secret;
  if (reply.server_nonce().size() != kAuthNonceBytes) {
    return Fail(Status(ErrorCode::ILLEGAL_CLIENT,
                       fmt::format("authentication failed: {} does not authenticate (no secret "
                                   "configured there?)",
                                   endpoint_.ToString())));
  }
  std::string expected = AuthProof(secret, kServerLabel, client_nonce, reply.server_nonce());
  if (!ProofMatches(expected, reply.server_proof())) {
    if (options.tenant_key) {
      return Fail(Status(
          ErrorCode::ILLEGAL_CLIENT,
          fmt::format("authentication failed: {} does not accept this tenant key for tenant '{}' "
                      "(a key made for another tenant or another pool?)",
                      endpoint_.ToString(), options.tenant_id)));
    }
    return Fail(Status(ErrorCode::ILLEGAL_CLIENT,
                       fmt::format("authentication failed: {} does not know the shared secret",
                                   endpoint_.ToString())));
  }
  Auth auth;
  auth.set_client_proof(AuthProof(secret, kClientLabel, client_nonce, reply.server_nonce()));
  Empty ok;
  Status st = Call(AUTH, auth, &ok, deadline);
  if (!st.ok()) return Fail(st);
  return Status::Ok();
}

Status Connection::StartTls(TlsClientContext& tls, Deadline deadline) {
  ssl_ = SSL_new(tls.native());
  if (ssl_ == nullptr) return Fail(Status(ErrorCode::RPC_FAIL, TlsErrorText("SSL_new failed")));
  BIO* bio = NewSocketBio(fd_);
  if (bio == nullptr) return Fail(Status(ErrorCode::RPC_FAIL, TlsErrorText("BIO_new failed")));
  SSL_set_bio(ssl_, bio, bio);  // the SSL owns it
  // Verify the name or address the server was dialled by against its certificate.
  in6_addr ip;
  bool is_ip = inet_pton(AF_INET, endpoint_.host.c_str(), &ip) == 1 ||
               inet_pton(AF_INET6, endpoint_.host.c_str(), &ip) == 1;
  if (is_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), endpoint_.host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl_, endpoint_.host.c_str());
    SSL_set1_host(ssl_, endpoint_.host.c_str());
  }
  ERR_clear_error();
  for (;;) {
    int rc = SSL_connect(ssl_);
    if (rc == 1) return Status::Ok();
    int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      Status st = WaitReady(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
      if (!st.ok()) return Fail(st);
      continue;
    }
    long verify = SSL_get_verify_result(ssl_);
    std::string why = verify != X509_V_OK ? fmt::format("server certificate rejected: {}",
                                                        X509_verify_cert_error_string(verify))
                                          : TlsErrorText(
                                                "connection closed during the handshake (does the "
                                                "server run without TLS?)");
    return Fail(Status(ErrorCode::RPC_FAIL,
                       fmt::format("TLS handshake with {} failed: {}", endpoint_.ToString(), why)));
  }
}

bool Connection::StillOpen() const {
  if (fd_ < 0) return false;
  if (ssl_ != nullptr) {
    // Idle TLS: nothing to read (WANT_READ) means open; anything else means closed or out of
    // sync.
    char c;
    ERR_clear_error();
    int n = SSL_peek(ssl_, &c, 1);
    bool open = n <= 0 && SSL_get_error(ssl_, n) == SSL_ERROR_WANT_READ;
    ERR_clear_error();
    return open;
  }
  char c;
  ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  // Idle connections have nothing to read: EAGAIN means open; 0 means closed; data means the
  // stream is out of sync, so it must not be reused either.
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

Status Connection::WaitToRead(Deadline deadline) {
  const auto budget = std::exchange(spin_budget_, std::chrono::microseconds{0});
  const bool readable =
      budget.count() > 0 && SpinUntil(budget, [&] {
        char c;
        ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
      });
  return readable ? Status::Ok() : WaitReady(POLLIN, deadline);
}

Status Connection::ReadReplyHead(uint8_t* header, std::string& ahead, size_t* ahead_len,
                                 Deadline deadline) {
  size_t got = 0;
  ssize_t n = 0;
  auto read_more = [&] {
    iovec v[2];
    int count = 0;
    if (got < kFrameHeaderBytes) v[count++] = {header + got, kFrameHeaderBytes - got};
    const size_t in_ahead = got > kFrameHeaderBytes ? got - kFrameHeaderBytes : 0;
    v[count++] = {ahead.data() + in_ahead, ahead.size() - in_ahead};
    n = ::readv(fd_, v, count);
    return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  };
  while (got < kFrameHeaderBytes) {
    if (!read_more()) {
      if (errno == EINTR) continue;
      // Nothing there yet: poll by reading (the read that finds the reply takes it), then sleep.
      const auto budget = std::exchange(spin_budget_, std::chrono::microseconds{0});
      if (budget.count() <= 0 || !SpinUntil(budget, read_more)) {
        KVPOOL_RETURN_IF_ERROR(WaitReady(POLLIN, deadline));
        continue;
      }
    }
    if (n == 0) {
      return Status(ErrorCode::RPC_FAIL,
                    fmt::format("connection to {} closed by peer", endpoint_.ToString()));
    }
    if (n < 0) {
      return Status(ErrorCode::RPC_FAIL,
                    fmt::format("receive from {}: {}", endpoint_.ToString(), strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  *ahead_len = got - kFrameHeaderBytes;
  return Status::Ok();
}

Status Connection::WaitReady(short events, Deadline deadline) {
  // Zero-copy completions on the error queue would wake poll() (POLLERR) until reaped.
  if (zero_copy_.outstanding() > 0) zero_copy_.Reap(fd_);
  if (stall_ <= Clock::duration::zero()) return WaitFd(fd_, events, deadline, endpoint_);
  // Progress is the socket becoming ready, or the peer acknowledging bytes we sent: on a slow
  // or shared link the send queue drains for seconds before it has room again (or before the
  // reply comes), while a partitioned or stopped peer acknowledges nothing.
  // Bytes arriving count too: a read waiting for its low-water mark (ReceiveLowWater) is not
  // woken by fewer, however steadily they come.
  int unacked = UnackedBytes(fd_);
  int queued = QueuedBytes(fd_);
  for (;;) {
    const Deadline patience = Clock::now() + stall_;
    if (patience >= deadline) return WaitFd(fd_, events, deadline, endpoint_);
    Status st = WaitFd(fd_, events, patience, endpoint_);
    if (st.code() != ErrorCode::RPC_TIMEOUT) return st;
    const int now_unacked = UnackedBytes(fd_);
    const int now_queued = QueuedBytes(fd_);
    if (now_unacked < 0 || (now_unacked == unacked && now_queued == queued)) break;
    unacked = now_unacked;
    queued = now_queued;
  }
  return Status(
      ErrorCode::RPC_TIMEOUT,
      fmt::format("{} made no progress for {} ms (a silent peer: partitioned, or its "
                  "host hung)",
                  endpoint_.ToString(), std::chrono::duration_cast<Millis>(stall_).count()));
}

Status Connection::Fail(Status st) {
  if (ssl_ != nullptr) {
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (fd_ >= 0) {
    // Abort, not close: a call given up mid-request must not keep sending. A plain close
    // leaves the unsent bytes to the kernel, which retransmits them until the peer takes them,
    // possibly after a partition heals and after the master gave the space to another put.
    // A zero linger time discards them and resets the connection.
    const linger abort_now{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort_now, sizeof(abort_now));
    ::close(fd_);
    fd_ = -1;
  }
  return st;
}

// Moves every byte of `iov` through the socket (send or receive), waiting with poll() for
// readiness until `deadline`. Advances `iov` in place.
Status Connection::MoveAll(std::span<iovec> iov, Deadline deadline, bool send) {
  if (ssl_ != nullptr) return MoveAllTls(iov, deadline, send);
  uint64_t left = send ? 0 : TotalLength(iov);
  ReceiveLowWater low_water = ReceiveLowWater::ForReply(fd_, left);
  size_t i = 0;
  while (i < iov.size()) {
    if (iov[i].iov_len == 0) {
      ++i;
      continue;
    }
    size_t cnt = std::min<size_t>(iov.size() - i, IOV_MAX);
    ssize_t n;
    if (send) {
      msghdr msg{};
      msg.msg_iov = &iov[i];
      msg.msg_iovlen = cnt;
      int zc = zero_copy_.FlagsFor(fd_, TotalLength(std::span<const iovec>(&iov[i], cnt)));
      n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | zc);
      if (n < 0 && errno == ENOBUFS && zc != 0) {  // completions not reaped yet fill the queue
        zc = zero_copy_.AfterNoBuffers(fd_);
        n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | zc);
      }
      if (n >= 0) zero_copy_.Sent(zc);
    } else {
      n = ::readv(fd_, &iov[i], static_cast<int>(cnt));
      if (n == 0) {
        return Status(ErrorCode::RPC_FAIL,
                      fmt::format("connection to {} closed by peer", endpoint_.ToString()));
      }
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!send) low_water.Before(left);
        KVPOOL_RETURN_IF_ERROR(send ? WaitReady(POLLOUT, deadline) : WaitToRead(deadline));
        continue;
      }
      return Status(ErrorCode::RPC_FAIL, fmt::format("{} {}: {}", send ? "send to" : "receive from",
                                                     endpoint_.ToString(), strerror(errno)));
    }
    if (!send) left -= static_cast<uint64_t>(n);
    for (size_t rest = static_cast<size_t>(n); rest > 0 && i < iov.size();) {
      size_t take = std::min(rest, iov[i].iov_len);
      iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + take;
      iov[i].iov_len -= take;
      rest -= take;
      if (iov[i].iov_len == 0) ++i;
    }
  }
  return Status::Ok();
}

Status Connection::SendInPieces(std::span<iovec> out, size_t head, const PayloadPieces& pieces,
                                Deadline deadline) {
  size_t i = head;  // the next payload iovec
  uint64_t at = 0;  // its bytes already sent with an earlier piece
  std::vector<iovec> piece;
  for (size_t k = 0; k < pieces.marks.size(); ++k) {
    uint64_t want = k + 1 < pieces.marks.size() ? pieces.marks[k + 1] - pieces.marks[k]
                                                : std::numeric_limits<uint64_t>::max();
    piece.clear();
    if (k == 0) piece.assign(out.begin(), out.begin() + static_cast<ptrdiff_t>(head));
    while (want > 0 && i < out.size()) {
      const uint64_t take = std::min<uint64_t>(want, out[i].iov_len - at);
      piece.push_back({static_cast<char*>(out[i].iov_base) + at, take});
      want -= take;
      at += take;
      if (at == out[i].iov_len) {
        ++i;
        at = 0;
      }
    }
    if (pieces.before != nullptr) (*pieces.before)(k);
    KVPOOL_RETURN_IF_ERROR(MoveAll(piece, deadline, /*send=*/true));
  }
  return Status::Ok();
}

// TLS: each buffer through SSL_write/SSL_read (OpenSSL has no scatter/gather), waiting with
// poll() whenever OpenSSL needs the socket readable or writable.
Status Connection::MoveAllTls(std::span<iovec> iov, Deadline deadline, bool send) {
  for (auto& v : iov) {
    while (v.iov_len > 0) {
      int chunk = static_cast<int>(std::min<size_t>(v.iov_len, 1 << 30));
      ERR_clear_error();
      int n = send ? SSL_write(ssl_, v.iov_base, chunk) : SSL_read(ssl_, v.iov_base, chunk);
      if (n > 0) {
        v.iov_base = static_cast<char*>(v.iov_base) + n;
        v.iov_len -= static_cast<size_t>(n);
        continue;
      }
      int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        // WANT_READ: the record needs bytes not yet on the socket, so the raw fd is the one
        // to poll.
        KVPOOL_RETURN_IF_ERROR(err == SSL_ERROR_WANT_READ ? WaitToRead(deadline)
                                                          : WaitReady(POLLOUT, deadline));
        continue;
      }
      if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && n == 0)) {
        return Status(ErrorCode::RPC_FAIL,
                      fmt::format("connection to {} closed by peer", endpoint_.ToString()));
      }
      return Status(ErrorCode::RPC_FAIL,
                    fmt::format("TLS {} {}: {}", send ? "send to" : "receive from",
                                endpoint_.ToString(), TlsErrorText(strerror(errno))));
    }
  }
  return Status::Ok();
}

Status Connection::Call(Method method, const google::protobuf::MessageLite& request,
                        google::protobuf::MessageLite* response,
                        std::span<const iovec> request_payload,
                        std::span<const iovec> response_payload, Deadline deadline,
                        const PayloadPieces* pieces) {
  if (fd_ < 0) {
    return Status(ErrorCode::RPC_FAIL,
                  fmt::format("connection to {} is broken", endpoint_.ToString()));
  }
  meta_buf_.clear();
  request.AppendToString(&meta_buf_);
  FrameHeader h;
  h.method = static_cast<uint16_t>(method);
  h.request_id = next_request_id_++;
  h.meta_len = static_cast<uint32_t>(meta_buf_.size());
  h.payload_len = TotalLength(request_payload);
  uint8_t header[kFrameHeaderBytes];
  EncodeFrameHeader(h, header);

  std::vector<iovec> out;
  out.reserve(2 + request_payload.size());
  out.push_back({header, kFrameHeaderBytes});
  out.push_back({meta_buf_.data(), meta_buf_.size()});
  out.insert(out.end(), request_payload.begin(), request_payload.end());
  Status st = pieces != nullptr && !pieces->marks.empty() ? SendInPieces(out, 2, *pieces, deadline)
                                                          : MoveAll(out, deadline, /*send=*/true);
  if (!st.ok()) return Fail(st);

  uint8_t rheader[kFrameHeaderBytes];
  size_t meta_ahead = 0;       // bytes of the reply's meta read along with its header
  spin_budget_ = reply_spin_;  // the reply is likely microseconds away: poll before sleeping
  if (ssl_ == nullptr && response_payload.empty()) {
    meta_buf_.resize(kReplyReadAhead);
    st = ReadReplyHead(rheader, meta_buf_, &meta_ahead, deadline);
  } else {  // a payload follows the meta straight into the caller's memory: no read-ahead
    iovec hv{rheader, kFrameHeaderBytes};
    st = MoveAll({&hv, 1}, deadline, /*send=*/false);
  }
  spin_budget_ = std::chrono::microseconds{0};
  if (!st.ok()) return Fail(st);
  auto rh = DecodeFrameHeader(rheader, limits_);
  if (!rh.ok()) return Fail(rh.status());
  if (rh->base_method() != h.method || rh->request_id != h.request_id || !rh->is_response()) {
    return Fail(Status(
        ErrorCode::RPC_FAIL,
        fmt::format("{} answered request {} method {} with request {} method {}",
                    endpoint_.ToString(), h.request_id, h.method, rh->request_id, rh->method)));
  }
  // Bytes read past the meta belong to a payload, which fails the checks below as it would
  // have unread; past a reply without one they are a peer out of step.
  if (meta_ahead > rh->meta_len && rh->payload_len == 0) {
    return Fail(
        Status(ErrorCode::RPC_FAIL, fmt::format("{} sent bytes past its reply to request {}",
                                                endpoint_.ToString(), h.request_id)));
  }
  meta_buf_.resize(rh->meta_len);  // keeps the meta_ahead bytes already in place
  if (rh->meta_len > meta_ahead) {
    iovec mv{meta_buf_.data() + meta_ahead, rh->meta_len - meta_ahead};
    st = MoveAll({&mv, 1}, deadline, /*send=*/false);
    if (!st.ok()) return Fail(st);
  }

  if (rh->status != 0) {
    ErrorInfo info;
    info.ParseFromString(meta_buf_);
    if (rh->payload_len != 0) {
      return Fail(Status(ErrorCode::RPC_FAIL, "error response carried a payload"));
    }
    return Status(ErrorCodeFromInt(rh->status), info.message());
  }
  if (rh->payload_len != TotalLength(response_payload)) {
    return Fail(Status(ErrorCode::TRANSFER_FAIL,
                       fmt::format("{} sent {} payload bytes, expected {}", endpoint_.ToString(),
                                   rh->payload_len, TotalLength(response_payload))));
  }
  std::vector<iovec> in(response_payload.begin(), response_payload.end());
  st = MoveAll(in, deadline, /*send=*/false);
  if (!st.ok()) return Fail(st);
  if (response != nullptr && !response->ParseFromString(meta_buf_)) {
    return Fail(Status(ErrorCode::RPC_FAIL,
                       fmt::format("unparsable response from {}", endpoint_.ToString())));
  }
  return Status::Ok();
}

}  // namespace kvpool::rpc
