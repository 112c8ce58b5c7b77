#include "rpc/endpoint.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>

#include "rpc/unique_fd.h"

namespace kvpool::rpc {

Result<Endpoint> ParseEndpoint(std::string_view text, uint16_t default_port,
                               std::string_view what) {
  auto bad = [&](std::string_view why) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("{} '{}' is not a valid host:port: {}", what, text, why));
  };
  Endpoint ep;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    ep.host = std::string(text.substr(1, close - 1));
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("expected ':' after ']'");
      port_text = rest.substr(1);
    }
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      ep.host = std::string(text);
    } else {
      ep.host = std::string(text.substr(0, colon));
      port_text = text.substr(colon + 1);
    }
  }
  if (ep.host.empty()) return bad("empty host");
  // A host must print back unambiguously: brackets only around an IPv6 literal, and a bare
  // host (not bracketed) cannot contain ':' ("::1:5" could be many things; write "[::1]:5").
  if (ep.host.find_first_of("[]") != std::string::npos) return bad("stray '[' or ']' in host");
  if (text.front() != '[' && ep.host.find(':') != std::string::npos) {
    return bad("an IPv6 host must be written in brackets, e.g. [::1]:50051");
  }
  if (port_text.empty()) {
    if (default_port == 0) return bad("missing port");
    ep.port = default_port;
    return ep;
  }
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || value == 0 ||
      value > 65535) {
    return bad("port must be a number from 1 to 65535");
  }
  ep.port = static_cast<uint16_t>(value);
  return ep;
}

namespace {

struct ResolvedAddrDeleter {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};
using ResolvedAddrs = std::unique_ptr<addrinfo, ResolvedAddrDeleter>;

Result<ResolvedAddrs> ResolveHostForCheck(const std::string& host, std::string_view what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  const int gai = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (gai != 0 || res == nullptr) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("{}: host '{}' does not resolve ({}); give a host name or IP "
                              "address of this machine",
                              what, host, gai != 0 ? gai_strerror(gai) : "no address"));
  }
  return ResolvedAddrs(res);
}

}  // namespace

Status CheckResolvable(const std::string& host, std::string_view what) {
  auto res = ResolveHostForCheck(host, what);
  return res.ok() ? Status::Ok() : res.status();
}

Status CheckLocalHost(const std::string& host, std::string_view what) {
  auto res = ResolveHostForCheck(host, what);
  if (!res.ok()) return res.status();
  for (addrinfo* ai = res->get(); ai != nullptr; ai = ai->ai_next) {
    // Binding port 0 of a datagram socket succeeds exactly for this machine's addresses.
    int fd = ::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const bool local = ::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
    ::close(fd);
    if (local) return Status::Ok();
  }
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("{}: host '{}' is not an address of this machine; the node must run "
                            "on this host (use 127.0.0.1:PORT)",
                            what, host));
}

std::string DefaultBindAddress(const std::string& host) {
  in6_addr tmp{};
  const bool is_ip =
      inet_pton(AF_INET, host.c_str(), &tmp) == 1 || inet_pton(AF_INET6, host.c_str(), &tmp) == 1;
  return is_ip ? host : "0.0.0.0";
}

bool IsLoopbackHost(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  for (std::string_view name : {"localhost", "localhost.localdomain", "ip6-localhost",
                                "ip6-loopback", "localhost6", "localhost6.localdomain6"}) {
    if (host.size() == name.size() &&
        std::equal(host.begin(), host.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        })) {
      return true;
    }
  }
  const std::string text(host);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

Result<std::string> LocalAddressToward(const std::string& host, uint16_t port,
                                       std::string_view what) {
  auto res = ResolveHostForCheck(host, what);
  if (!res.ok()) return res.status();
  std::string last_error = "no address";
  for (addrinfo* ai = res->get(); ai != nullptr; ai = ai->ai_next) {
    sockaddr_storage peer{};
    std::memcpy(&peer, ai->ai_addr, ai->ai_addrlen);
    if (peer.ss_family == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&peer)->sin_port = htons(port == 0 ? 9 : port);
    } else if (peer.ss_family == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&peer)->sin6_port = htons(port == 0 ? 9 : port);
    } else {
      continue;
    }
    UniqueFd fd(::socket(peer.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    // connect() on a datagram socket picks the route and source address; nothing is sent.
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&peer), ai->ai_addrlen) != 0) {
      last_error = strerror(errno);
      continue;
    }
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      last_error = strerror(errno);
      continue;
    }
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr =
        local.ss_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
    if (inet_ntop(local.ss_family, addr, text, sizeof(text)) == nullptr) continue;
    return std::string(text);
  }
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("{}: no route from this machine to '{}' ({}); give this host's "
                            "address explicitly",
                            what, host, last_error));
}

}  // namespace kvpool::rpc
