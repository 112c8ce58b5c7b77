#include "common/log.h"

#include <fmt/format.h>

namespace kvpool {

Status InitLogging(std::string_view level, std::string_view role) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("log level '{}' is unknown (use trace, debug, info, warn, error, "
                              "critical or off)",
                              level));
  }
  spdlog::set_level(lvl);
  spdlog::set_pattern(fmt::format("%Y-%m-%d %H:%M:%S.%e %^%L%$ [{}:%P] %v", role));
  return Status::Ok();
}

}  // namespace kvpool
