// "host:port" endpoints as users type them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kvpool/status.h"

namespace kvpool::rpc {

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const { return host + ":" + std::to_string(port); }
};

// Parses "host:port" ("[::1]:50051" for IPv6). When the text has no port, `default_port` is used
// if non-zero. Errors: INVALID_PARAMS naming `what` and the text.
Result<Endpoint> ParseEndpoint(std::string_view text, uint16_t default_port = 0,
                               std::string_view what = "address");

// OK when `host` resolves to at least one address (getaddrinfo, numeric or by name). Errors:
// INVALID_PARAMS naming `what`, the host and the resolver's reason. May block on the system
// resolver (DNS) for as long as it takes.
Status CheckResolvable(const std::string& host, std::string_view what);

// OK when `host` resolves to an address of this machine (one a socket can bind: loopback, or an
// address of a local interface). Errors: INVALID_PARAMS naming `what` and the host, saying
// whether it does not resolve or resolves only to other machines' addresses.
Status CheckLocalHost(const std::string& host, std::string_view what);

// Where a server announced as `host` listens by default: `host` itself when it is a numeric
// address (then it is reachable there and nowhere else), else every address ("0.0.0.0").
std::string DefaultBindAddress(const std::string& host);

// True when `host` is a loopback address written literally (127.0.0.0/8, ::1, ::ffff:127.x.x.x)
// or one of the names every system maps to loopback ("localhost", "ip6-localhost", ...). No
// resolver call: a name resolves differently on every host, so only these are known to mean
// "this machine" to whoever reads them.
bool IsLoopbackHost(std::string_view host);

// The numeric address ("10.0.0.2", "fd00::2") of this machine's interface that traffic to
// `host`:`port` leaves from: what another host on that path reaches this one by. No packet is
// sent (a datagram socket is connected, which only consults the routing table), so the peer need
// not be up. Errors: INVALID_PARAMS naming `what` when `host` does not resolve or no route leads
// there. May block on the system resolver for a host name.
Result<std::string> LocalAddressToward(const std::string& host, uint16_t port,
                                       std::string_view what);

}  // namespace kvpool::rpc
