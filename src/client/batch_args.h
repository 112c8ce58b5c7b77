// Shapes of batch arguments shared by the embedded and standalone clients.
#pragma once

#include <vector>

namespace kvpool::client {

// Wraps single-buffer batch arguments as one-buffer lists (the multi-buffer form).
template <typename Ptr>
std::vector<std::vector<Ptr>> OnePerKey(const std::vector<Ptr>& v) {
  std::vector<std::vector<Ptr>> out;
  out.reserve(v.size());
  for (const auto& p : v) out.push_back({p});
  return out;
}

}  // namespace kvpool::client
