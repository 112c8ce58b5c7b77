// Reading structured values off a fuzzer's byte string. Every read is bounds-checked: past the
// end, numbers read as 0 and byte strings come back short.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

// A fuzz target's own invariant: aborts (which libFuzzer reports as a crash, with the input)
// when `cond` is false, in every build type.
#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

namespace kvpool::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size)
      : data_(reinterpret_cast<const char*>(data)), size_(size) {}

  bool empty() const { return pos_ >= size_; }
  size_t remaining() const { return size_ - pos_; }

  uint8_t U8() { return pos_ < size_ ? static_cast<uint8_t>(data_[pos_++]) : 0; }
  uint16_t U16() { return static_cast<uint16_t>(U8() | (U8() << 8)); }
  uint64_t U64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(U8()) << (8 * i);
    return v;
  }
  // Up to `n` bytes.
  std::string_view Bytes(size_t n) {
    size_t take = n < remaining() ? n : remaining();
    std::string_view out(data_ + pos_, take);
    pos_ += take;
    return out;
  }
  // A length-prefixed (u16) byte string.
  std::string_view Chunk() { return Bytes(U16()); }
  std::string_view Rest() { return Bytes(remaining()); }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace kvpool::fuzz
