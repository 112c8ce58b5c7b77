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

}  // namespace kvpool::rpc
