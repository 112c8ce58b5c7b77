// Splitting a batch of keys into requests that fit in a frame. A frame carries at most 64 MiB
// of metadata (rpc/frame.h); a batch of 16k keys of 4 KiB would not fit, and neither would a
// reply that quotes every key and lists up to 16 replicas of each. Callers that send a batch's
// keys in one message split it with KeyChunks and send one request per chunk, in order.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvpool {

// Most keys, and most key bytes, in one request. The engines' batches (up to 128 pages of
// ~100-byte keys) are far below both and always travel in one request.
inline constexpr size_t kMaxKeysPerRequest = 8192;
inline constexpr size_t kMaxKeyBytesPerRequest = 8 << 20;

// [begin, end) ranges covering 0..n in order, each within both limits (a single key larger
// than the byte limit gets a range of its own). key_bytes(i): the size of key i. n == 0 gives
// one empty range. Thread-safe (pure).
template <typename KeyBytes>
std::vector<std::pair<size_t, size_t>> KeyChunks(size_t n, KeyBytes&& key_bytes) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t begin = 0, bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t b = key_bytes(i);
    if (i > begin && (i - begin == kMaxKeysPerRequest || bytes + b > kMaxKeyBytesPerRequest)) {
      out.emplace_back(begin, i);
      begin = i;
      bytes = 0;
    }
    bytes += b;
  }
  out.emplace_back(begin, n);
  return out;
}

inline std::vector<std::pair<size_t, size_t>> KeyChunks(const std::vector<std::string>& keys) {
  return KeyChunks(keys.size(), [&](size_t i) { return keys[i].size(); });
}
inline std::vector<std::pair<size_t, size_t>> KeyChunks(std::span<const std::string_view> keys) {
  return KeyChunks(keys.size(), [&](size_t i) { return keys[i].size(); });
}

}  // namespace kvpool
