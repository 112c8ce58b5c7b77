// Batch calls too big for one frame, as several calls (common/key_chunks.h): the standalone
// client's batch methods run themselves once per chunk of keys and concatenate the results.
#pragma once

#include <iterator>
#include <utility>
#include <vector>

namespace kvpool::client {

// Elements [begin, end) of `v`.
template <typename T>
std::vector<T> PartOf(const std::vector<T>& v, size_t begin, size_t end) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(begin),
                        v.begin() + static_cast<std::ptrdiff_t>(end));
}

// call(begin, end) returns the results of keys [begin, end); the chunks' results, in order.
template <typename Call>
auto ConcatChunks(const std::vector<std::pair<size_t, size_t>>& chunks, Call&& call) {
  decltype(call(size_t{0}, size_t{0})) out;
  for (auto [begin, end] : chunks) {
    auto part = call(begin, end);
    std::move(part.begin(), part.end(), std::back_inserter(out));
  }
  return out;
}

}  // namespace kvpool::client
