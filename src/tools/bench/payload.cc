#include "tools/bench/payload.h"

namespace kvpool::tools::bench {

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

PagePattern::PagePattern(uint64_t page_bytes, uint64_t seed) : words_(page_bytes / 8) {
  uint64_t state = seed;
  for (auto& w : words_) w = Mix64(state++);
}

void PagePattern::Fill(void* dst, uint64_t key_id) const {
  const uint64_t mask = Mix64(key_id) | 1;
  auto* out = static_cast<uint64_t*>(dst);
  const uint64_t* in = words_.data();
  const size_t n = words_.size();
  for (size_t i = 0; i < n; ++i) out[i] = in[i] ^ mask;
}

std::optional<uint64_t> PagePattern::FirstMismatch(const void* got, uint64_t key_id) const {
  const uint64_t mask = Mix64(key_id) | 1;
  const auto* g = static_cast<const uint64_t*>(got);
  const uint64_t* in = words_.data();
  const size_t n = words_.size();
  uint64_t diff = 0;
  for (size_t i = 0; i < n; ++i) diff |= g[i] ^ in[i] ^ mask;  // vectorizes; exact place below
  if (diff == 0) return std::nullopt;
  for (size_t i = 0; i < n; ++i) {
    if ((g[i] ^ in[i] ^ mask) != 0) return i * 8;
  }
  return std::nullopt;
}

}  // namespace kvpool::tools::bench
