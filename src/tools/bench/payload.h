// Page contents for the bench: non-constant, different for every key in every 8-byte word, and
// cheap to make and to check, so a get that returns another key's bytes, stale bytes, shifted
// bytes or a partial page is caught.
//
// Content of key k: word w = pattern[w] ^ Mix64(k), where `pattern` is pseudo-random per seed.
// Threading: const methods may be called from any number of threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kvpool::tools::bench {

// The splitmix64 finalizer: a cheap, well-spread 64-bit hash.
uint64_t Mix64(uint64_t x);

class PagePattern {
 public:
  // REQUIRES: page_bytes is a multiple of 8.
  PagePattern(uint64_t page_bytes, uint64_t seed);

  uint64_t page_bytes() const { return words_.size() * 8; }
  // Writes key `key_id`'s content to [dst, dst + page_bytes). REQUIRES: dst 8-byte aligned.
  void Fill(void* dst, uint64_t key_id) const;
  // The byte offset of the first 8-byte word of `got` that differs from key `key_id`'s
  // content; nullopt when all page_bytes match. REQUIRES: got 8-byte aligned.
  std::optional<uint64_t> FirstMismatch(const void* got, uint64_t key_id) const;

 private:
  std::vector<uint64_t> words_;
};

}  // namespace kvpool::tools::bench
