#include "master/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace kvpool::master {

Result<PlacementStrategy> ParsePlacementStrategy(std::string_view name) {
  if (name == "random") return PlacementStrategy::kRandom;
  if (name == "free_ratio_first") return PlacementStrategy::kFreeRatioFirst;
  if (name == "local_first") return PlacementStrategy::kLocalFirst;
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("placement strategy '{}' is unknown; use random, free_ratio_first or "
                            "local_first",
                            name));
}

std::string_view PlacementStrategyName(PlacementStrategy s) {
  switch (s) {
    case PlacementStrategy::kRandom:
      return "random";
    case PlacementStrategy::kFreeRatioFirst:
      return "free_ratio_first";
    case PlacementStrategy::kLocalFirst:
      return "local_first";
  }
  return "random";
}

std::vector<size_t> PlacementOrder(std::span<const PlacementCandidate> candidates,
                                   PlacementStrategy strategy, bool prefer_same_host,
                                   std::mt19937_64& rng) {
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Shuffle first: it is the random strategy, and breaks ties of the others fairly.
  std::shuffle(order.begin(), order.end(), rng);
  if (strategy == PlacementStrategy::kFreeRatioFirst) {
    auto free_ratio = [&](size_t i) {
      const PlacementCandidate& c = candidates[i];
      if (c.capacity == 0) return 0.0;
      return static_cast<double>(c.capacity - std::min(c.used, c.capacity)) /
             static_cast<double>(c.capacity);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return free_ratio(a) > free_ratio(b); });
  }
  if (prefer_same_host || strategy == PlacementStrategy::kLocalFirst) {
    std::stable_partition(order.begin(), order.end(),
                          [&](size_t i) { return candidates[i].same_host; });
  }
  return order;
}

}  // namespace kvpool::master
