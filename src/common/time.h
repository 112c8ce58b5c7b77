// Clocks and deadlines. Every network wait in kvpool takes a Deadline.
#pragma once

#include <chrono>
#include <cstdint>

namespace kvpool {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
using Millis = std::chrono::milliseconds;

inline Deadline DeadlineAfter(Clock::duration d) { return Clock::now() + d; }

// Milliseconds left until `d`, never negative.
inline int64_t MillisLeft(Deadline d) {
  auto left = std::chrono::duration_cast<Millis>(d - Clock::now()).count();
  return left > 0 ? left : 0;
}

inline bool Expired(Deadline d) { return Clock::now() >= d; }

}  // namespace kvpool
