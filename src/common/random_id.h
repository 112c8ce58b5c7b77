// Identifiers that must not collide across processes and restarts.
#pragma once

#include <cstdint>
#include <string>

namespace kvpool {

// 128 random bits as 32 hex characters (from std::random_device).
std::string RandomId();
// 64 random bits.
uint64_t RandomU64();

}  // namespace kvpool
