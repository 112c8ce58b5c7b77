// Placement strategies: the order in which the master tries segments for an object's replicas
// (after the put's preferred_segments, which always come first).
//
//   random            uniformly at random among the segments with room (the default; spreads
//                     load without any state).
//   free_ratio_first  the segment with the largest free fraction first (evens out fill levels,
//                     so eviction starts late everywhere at once).
//   local_first       segments on the writing client's host first (its reads stay local), then
//                     random. A put's prefer_alloc_in_same_node asks the same of any strategy.
//
// Threading: pure functions; the caller passes its own random generator.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "kvpool/status.h"

namespace kvpool::master {

enum class PlacementStrategy { kRandom, kFreeRatioFirst, kLocalFirst };

// "random", "free_ratio_first", "local_first". Errors: INVALID_PARAMS (anything else).
Result<PlacementStrategy> ParsePlacementStrategy(std::string_view name);
std::string_view PlacementStrategyName(PlacementStrategy s);

// What placement knows of one candidate segment.
struct PlacementCandidate {
  uint64_t capacity = 0;
  uint64_t used = 0;
  bool same_host = false;  // served from the writing client's host
};

// The order (indices into `candidates`) in which to try the candidates. Segments on the
// client's host come first when `prefer_same_host` or the strategy is local_first.
std::vector<size_t> PlacementOrder(std::span<const PlacementCandidate> candidates,
                                   PlacementStrategy strategy, bool prefer_same_host,
                                   std::mt19937_64& rng);

}  // namespace kvpool::master
