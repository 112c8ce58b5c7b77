// The process environment, read in one place: library code calls GetEnv, never getenv, so every
// variable kvpool honours can be found here and in the client option table
// (client/client_config.h). scripts/check-layers.sh fails on a getenv elsewhere in src/ (tools
// may read PATH).
#pragma once

#include <optional>
#include <string>

namespace kvpool {

// The value of variable `name`; nullopt when it is unset (an empty value is returned as "").
// Thread-safe as long as nothing in the process calls setenv concurrently.
std::optional<std::string> GetEnv(const char* name);

}  // namespace kvpool
