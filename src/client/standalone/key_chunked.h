// Batch calls too big for one frame, as several calls (common/key_chunks.h): the standalone
// client's batch methods run themselves once per chunk of keys and concatenate the results.
#pragma once

#include <iterator>
#include <utility>
#include <vector>

#include "common/key_chunks.h"
#include "kvpool/batch.h"

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

// A batch too big for one frame, one frame's worth at a time: send(part, begin, end,
// part_results) once per chunk of keys [begin, end), with that chunk's objects and their
// entries of `results` (in and out). false, sending nothing, when the batch fits in one frame.
template <typename R, typename Send>
bool SendInChunks(const ObjectBatch& batch, std::vector<R>& results, Send&& send) {
  const auto chunks = KeyChunks(batch.keys());
  if (chunks.size() <= 1) return false;
  for (auto [begin, end] : chunks) {
    const auto first = results.begin() + static_cast<std::ptrdiff_t>(begin);
    std::vector<R> part(first, results.begin() + static_cast<std::ptrdiff_t>(end));
    send(batch.Part(begin, end), begin, end, part);
    std::move(part.begin(), part.end(), first);
  }
  return true;
}

}  // namespace kvpool::client
