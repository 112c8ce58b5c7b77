#include "rpc/endpoint.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <memory>

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

}  // namespace kvpool::rpc
