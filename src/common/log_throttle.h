// Keeps a warning that can repeat once per request (a refused stale location after a host
// restart, say) to at most one line per interval, saying how many were held back.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>

#include "common/time.h"

namespace kvpool {

class LogThrottle {
 public:
  explicit LogThrottle(Clock::duration interval) : interval_(interval) {}

  // Whether to log this occurrence: the number of occurrences held back since the last one let
  // through (0 for the first), or nullopt to hold this one back. Thread-safe; of racing callers
  // in one interval exactly one is let through.
  std::optional<uint64_t> Allow(Clock::time_point now = Clock::now()) {
    const int64_t t = now.time_since_epoch().count();
    int64_t next = next_.load(std::memory_order_relaxed);
    if (t < next || !next_.compare_exchange_strong(next, t + interval_.count())) {
      held_.fetch_add(1, std::memory_order_relaxed);
      return std::nullopt;
    }
    return held_.exchange(0, std::memory_order_relaxed);
  }

 private:
  const Clock::duration interval_;
  std::atomic<int64_t> next_{std::numeric_limits<int64_t>::min()};  // in Clock ticks
  std::atomic<uint64_t> held_{0};
};

}  // namespace kvpool
