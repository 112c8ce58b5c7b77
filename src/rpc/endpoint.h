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

}  // namespace kvpool::rpc
