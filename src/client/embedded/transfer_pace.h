// How long this client's recent transfers took per KiB, one figure for writes and one for reads.
//
// The client tells the master its pace with the request that comes before a transfer (PUT_START,
// GET_REPLICA_LIST), so the master knows when the next request will follow: a PUT_END polled for
// while a small write runs, or no poll at all while a long one does (rpc::Reply::
// next_request_after). The client measures, because only it sees its transfers end.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/time.h"

namespace kvpool::client {

class TransferPace {
 public:
  // Smaller transfers are not sampled: a call's fixed costs, not its bytes, set their time.
  static constexpr uint64_t kMinSampleBytes = 512 * 1024;
  // A pace beyond this (under ~10 MB/s) is taken as this: the master's sums stay in range.
  static constexpr uint32_t kMaxNsPerKib = 100'000;

  // Folds in a transfer of `bytes` that took `took` (a moving average: each new sample weighs
  // a quarter). Thread-safe: concurrent samples may overwrite each other, which an estimate
  // can afford.
  void Record(uint64_t bytes, Clock::duration took) {
    if (bytes < kMinSampleBytes) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
    const auto sample = static_cast<uint32_t>(
        std::clamp<int64_t>(ns / static_cast<int64_t>(bytes / 1024), 1, kMaxNsPerKib));
    const uint32_t old = ns_per_kib_.load(std::memory_order_relaxed);
    ns_per_kib_.store(old == 0 ? sample : (3 * old + sample) / 4, std::memory_order_relaxed);
  }

  // Nanoseconds per KiB of the recent transfers; 0 before the first sample.
  uint32_t NsPerKib() const { return ns_per_kib_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> ns_per_kib_{0};
};

}  // namespace kvpool::client
