// Logging set-up. Log lines grep well: "key=..., segment=..., error=...".
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

#include "kvpool/status.h"

namespace kvpool {

// Sets the process-wide spdlog level and pattern ("trace".."off"). Call once from main(); the
// library itself never changes logging configuration. INVALID_PARAMS for an unknown level.
Status InitLogging(std::string_view level, std::string_view role);

}  // namespace kvpool
