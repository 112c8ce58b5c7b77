#include "common/random_id.h"

#include <fmt/format.h>

#include <random>

namespace kvpool {

uint64_t RandomU64() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::string RandomId() { return fmt::format("{:016x}{:016x}", RandomU64(), RandomU64()); }

}  // namespace kvpool
