// Steady-state cost of OffsetAllocator: a 64 GiB segment kept about half full while each
// iteration frees one random live allocation and allocates a new one of random size.
//
// Per-iteration time is one Free + one Allocate; the time_per_op counter is per single call.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "alloc/offset_allocator.h"

namespace kvpool::alloc {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kSpace = 64 * kGiB;
constexpr size_t kTableSize = 1 << 16;  // Pre-drawn sizes and victims; no RNG in the loop.

void BM_AllocFreePairs(benchmark::State& state) {
  OffsetAllocator allocator(kSpace);
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<uint64_t> size_dist(64 * kKiB, 4 * kMiB);
  std::vector<Allocation> live;
  while (allocator.used_bytes() < kSpace / 2) {
    std::optional<Allocation> a = allocator.Allocate(size_dist(rng));
    if (!a) break;
    live.push_back(*a);
  }
  std::vector<uint64_t> sizes(kTableSize);
  std::vector<size_t> victims(kTableSize);
  for (size_t i = 0; i < kTableSize; ++i) {
    sizes[i] = size_dist(rng);
    victims[i] = static_cast<size_t>(rng() % live.size());
  }

  size_t i = 0;
  for (auto _ : state) {
    Allocation& slot = live[victims[i]];
    allocator.Free(slot);
    std::optional<Allocation> a = allocator.Allocate(sizes[i]);
    if (!a) {  // Not expected at 50% fill.
      state.SkipWithError("Allocate failed at ~50% fill");
      break;
    }
    slot = *a;
    benchmark::DoNotOptimize(slot);
    i = (i + 1) % kTableSize;
  }
  // Seconds per single Allocate or Free call; printed with an SI prefix (e.g. "42n" = 42 ns).
  state.counters["time_per_op"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 2,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["fill"] = static_cast<double>(allocator.used_bytes()) / kSpace;
  state.counters["live"] = static_cast<double>(live.size());
}
BENCHMARK(BM_AllocFreePairs);

}  // namespace
}  // namespace kvpool::alloc

BENCHMARK_MAIN();
