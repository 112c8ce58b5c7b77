#include "common/env.h"

#include <cstdlib>

namespace kvpool {

std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): no setenv in kvpool
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace kvpool
