// For server tests that play a misbehaving peer: a plain loopback socket that has done no
// handshake, and a check that the server closed it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace kvpool::rpc {

// A socket connected to 127.0.0.1:`port` with a 5 s receive timeout (so a test never hangs on
// a server that stays silent); -1 when connect fails. The caller closes it.
inline int RawLoopbackSocket(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// True when the server closed `fd` (read returns 0 or reset).
inline bool PeerClosed(int fd) {
  char c;
  ssize_t n = ::read(fd, &c, 1);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

}  // namespace kvpool::rpc
