#include "rpc/unix_socket.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <thread>

namespace kvpool::rpc {
namespace {

struct UnixAddress {
  sockaddr_un addr{};
  socklen_t len = 0;
};

Result<UnixAddress> MakeAddress(const std::string& name) {
  UnixAddress a;
  a.addr.sun_family = AF_UNIX;
  const bool abstract = !name.empty() && name[0] == '@';
  const size_t n = name.size();
  if (n == 0 || (abstract && n == 1) || n >= sizeof(a.addr.sun_path)) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("unix socket name '{}' must have 1..{} characters", name,
                              sizeof(a.addr.sun_path) - 1));
  }
  std::memcpy(a.addr.sun_path, name.data(), n);
  if (abstract) a.addr.sun_path[0] = '\0';  // abstract namespace: leading NUL, no terminator
  a.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n + (abstract ? 0 : 1));
  return a;
}

// Waits for `events` on fd until the deadline (EINTR-safe).
Status WaitFor(int fd, short events, Deadline deadline, std::string_view what) {
  for (;;) {
    int64_t left = MillisLeft(deadline);
    if (left <= 0) {
      return Status(ErrorCode::RPC_TIMEOUT, fmt::format("deadline passed during {}", what));
    }
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) {
      return Status(ErrorCode::RPC_FAIL, fmt::format("poll during {}: {}", what, strerror(errno)));
    }
  }
}

// Takes ownership of every descriptor in the control data of `msg`.
void CollectFds(msghdr& msg, std::vector<UniqueFd>& fds) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const unsigned char* data = CMSG_DATA(c);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));
      fds.emplace_back(fd);
    }
  }
}

// Reads exactly n bytes, collecting any descriptors that arrive with them.
Status RecvExact(int fd, uint8_t* buf, size_t n, Deadline deadline, std::vector<UniqueFd>& fds,
                 bool frame_start) {
  size_t got = 0;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerFrame)];
  while (got < n) {
    iovec v{buf + got, n - got};
    msghdr msg{};
    msg.msg_iov = &v;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t r = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (r > 0) {
      CollectFds(msg, fds);
      if ((msg.msg_flags & MSG_CTRUNC) != 0 || fds.size() > kMaxFdsPerFrame) {
        return Status(ErrorCode::INVALID_PARAMS,
                      fmt::format("frame carries more than {} descriptors", kMaxFdsPerFrame));
      }
      got += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) {
      return Status(ErrorCode::RPC_FAIL,
                    frame_start && got == 0 ? "connection closed by peer"
                                            : "connection closed by peer in the middle of a frame");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      KVPOOL_RETURN_IF_ERROR(WaitFor(fd, POLLIN, deadline, "a local receive"));
      continue;
    }
    return Status(ErrorCode::RPC_FAIL, fmt::format("local receive: {}", strerror(errno)));
  }
  return Status::Ok();
}

// One recvmsg of at most n bytes. Sets *got (0 with *would_block when nothing is there yet).
Status RecvOnce(int fd, uint8_t* buf, size_t n, std::vector<UniqueFd>& fds, bool frame_start,
                size_t* got, bool* would_block) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerFrame)];
  *got = 0;
  *would_block = false;
  for (;;) {
    iovec v{buf, n};
    msghdr msg{};
    msg.msg_iov = &v;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t r = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (r > 0) {
      CollectFds(msg, fds);
      if ((msg.msg_flags & MSG_CTRUNC) != 0 || fds.size() > kMaxFdsPerFrame) {
        return Status(ErrorCode::INVALID_PARAMS,
                      fmt::format("frame carries more than {} descriptors", kMaxFdsPerFrame));
      }
      *got = static_cast<size_t>(r);
      return Status::Ok();
    }
    if (r == 0) {
      return Status(ErrorCode::RPC_FAIL, frame_start ? "connection closed by peer"
                                                     : "connection closed by peer in the "
                                                       "middle of a frame");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      *would_block = true;
      return Status::Ok();
    }
    return Status(ErrorCode::RPC_FAIL, fmt::format("local receive: {}", strerror(errno)));
  }
}

// Metadata grows by pieces no larger than what has arrived so far (and at least this).
constexpr size_t kUnixMetaChunkBytes = 64 * 1024;

}  // namespace

void UnixFrameReader::Reset() {
  frame_.fds.clear();
  if (frame_.meta.capacity() > (1u << 20)) std::string().swap(frame_.meta);
  frame_.meta.clear();
  header_got_ = 0;
  header_done_ = false;
  meta_got_ = 0;
}

Result<bool> UnixFrameReader::ReadAvailable(int fd, const FrameLimits& limits) {
  size_t got = 0;
  bool would_block = false;
  while (!header_done_) {
    KVPOOL_RETURN_IF_ERROR(RecvOnce(fd, header_ + header_got_, kFrameHeaderBytes - header_got_,
                                    frame_.fds, header_got_ == 0, &got, &would_block));
    if (would_block) return false;
    header_got_ += got;
    if (header_got_ < kFrameHeaderBytes) continue;
    auto h = DecodeFrameHeader(header_, limits);
    if (!h.ok()) return h.status();
    frame_.header = *h;
    header_done_ = true;
  }
  const size_t want = frame_.header.meta_len;
  while (meta_got_ < want) {
    if (meta_got_ == frame_.meta.size()) {
      size_t grow = std::min(want - meta_got_, std::max(kUnixMetaChunkBytes, meta_got_));
      frame_.meta.resize(meta_got_ + grow);
    }
    KVPOOL_RETURN_IF_ERROR(RecvOnce(fd, reinterpret_cast<uint8_t*>(frame_.meta.data()) + meta_got_,
                                    frame_.meta.size() - meta_got_, frame_.fds, false, &got,
                                    &would_block));
    if (would_block) return false;
    meta_got_ += got;
  }
  return true;
}

FrameLimits UnixFrameLimits() {
  FrameLimits l;
  l.max_payload_bytes = 0;
  return l;
}

Result<UniqueFd> ListenUnix(const std::string& name, int backlog) {
  auto addr = MakeAddress(name);
  if (!addr.ok()) return addr.status();
  if (name[0] != '@') {
    struct stat st;
    if (::lstat(name.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      // A socket file: refuse a live listener, remove a stale one.
      auto probe = ConnectUnix(name, DeadlineAfter(std::chrono::milliseconds(200)));
      if (probe.ok()) {
        return Status(ErrorCode::RPC_FAIL,
                      fmt::format("unix socket {} is in use by another process", name));
      }
      ::unlink(name.c_str());
    }
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return Status(ErrorCode::RPC_FAIL, fmt::format("socket(AF_UNIX): {}", strerror(errno)));
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr->addr), addr->len) != 0 ||
      ::listen(fd.get(), backlog) != 0) {
    return Status(ErrorCode::RPC_FAIL,
                  fmt::format("cannot listen on unix socket {}: {}", name, strerror(errno)));
  }
  return fd;
}

Result<UniqueFd> ConnectUnix(const std::string& name, Deadline deadline) {
  auto addr = MakeAddress(name);
  if (!addr.ok()) return addr.status();
  for (;;) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      return Status(ErrorCode::RPC_FAIL, fmt::format("socket(AF_UNIX): {}", strerror(errno)));
    }
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr->addr), addr->len) == 0) {
      return fd;
    }
    int err = errno;
    if (err == EINPROGRESS) {
      KVPOOL_RETURN_IF_ERROR(WaitFor(fd.get(), POLLOUT, deadline, "a local connect"));
      int so_error = 0;
      socklen_t len = sizeof(so_error);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error == 0) return fd;
      err = so_error;
    }
    if (err != EAGAIN && err != EINTR) {
      return Status(ErrorCode::RPC_FAIL,
                    fmt::format("cannot connect to unix socket {}: {}", name, strerror(err)));
    }
    // The listener's backlog is full: retry until the deadline.
    if (Expired(deadline)) {
      return Status(ErrorCode::RPC_TIMEOUT,
                    fmt::format("deadline passed connecting to unix socket {}", name));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

UniqueFd AcceptUnix(int listen_fd) {
  return UniqueFd(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
}

Status SendUnixFrame(int fd, const FrameHeader& header, std::string_view meta,
                     std::span<const int> fds, Deadline deadline) {
  if (fds.size() > kMaxFdsPerFrame || header.payload_len != 0) {
    return Status(ErrorCode::INVALID_PARAMS, "local frames carry no payload and few descriptors");
  }
  uint8_t head[kFrameHeaderBytes];
  EncodeFrameHeader(header, head);
  iovec iov[2] = {{head, kFrameHeaderBytes}, {const_cast<char*>(meta.data()), meta.size()}};
  size_t index = 0;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerFrame)];
  bool fds_sent = fds.empty();
  while (index < 2) {
    if (iov[index].iov_len == 0) {
      ++index;
      continue;
    }
    msghdr msg{};
    msg.msg_iov = &iov[index];
    msg.msg_iovlen = 2 - index;
    if (!fds_sent) {
      std::memset(control, 0, sizeof(control));
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        KVPOOL_RETURN_IF_ERROR(WaitFor(fd, POLLOUT, deadline, "a local send"));
        continue;
      }
      return Status(ErrorCode::RPC_FAIL, fmt::format("local send: {}", strerror(errno)));
    }
    fds_sent = true;  // the descriptors ride on the first byte that went out
    size_t left = static_cast<size_t>(n);
    while (left > 0 && index < 2) {
      size_t take = std::min(left, iov[index].iov_len);
      iov[index].iov_base = static_cast<char*>(iov[index].iov_base) + take;
      iov[index].iov_len -= take;
      left -= take;
      if (iov[index].iov_len == 0) ++index;
    }
  }
  return Status::Ok();
}

Status RecvUnixFrame(int fd, const FrameLimits& limits, Deadline deadline, UnixFrame* out) {
  out->fds.clear();
  uint8_t head[kFrameHeaderBytes];
  KVPOOL_RETURN_IF_ERROR(RecvExact(fd, head, kFrameHeaderBytes, deadline, out->fds, true));
  auto h = DecodeFrameHeader(head, limits);
  if (!h.ok()) return h.status();
  out->header = *h;
  out->meta.resize(h->meta_len);
  return RecvExact(fd, reinterpret_cast<uint8_t*>(out->meta.data()), out->meta.size(), deadline,
                   out->fds, false);
}

bool WaitReadable(int fd, Clock::duration timeout) {
  pollfd p{fd, POLLIN, 0};
  auto ms = std::chrono::duration_cast<Millis>(timeout).count();
  int rc = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, ms)));
  return rc > 0;
}

PeerCredentials PeerOf(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return {};
  return {static_cast<int>(cred.pid), static_cast<int>(cred.uid)};
}

}  // namespace kvpool::rpc
