// Test support: the bytes of an object as a function of its key (and a version), so any test
// process can write and verify objects without keeping a copy. Bytes differ per key in every
// byte position: another key's, a stale version's or shifted bytes never match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvpool::testing {

// The bytes of version `version` of object `key` (an xorshift stream seeded by both).
inline void FillObject(const std::string& key, uint32_t version, uint8_t* p, size_t n) {
  uint64_t x = (std::hash<std::string>()(key) ^ (uint64_t{version} * 0x9e3779b97f4a7c15ULL)) | 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<uint8_t>(x);
  }
}

inline std::vector<uint8_t> ObjectBytes(const std::string& key, uint32_t version, size_t n) {
  std::vector<uint8_t> v(n);
  FillObject(key, version, v.data(), n);
  return v;
}

}  // namespace kvpool::testing
