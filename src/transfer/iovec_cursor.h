// A position in the concatenation of a list of iovecs, copied to or from in order whatever the
// iovecs' edges: a caller's buffers need not line up with a segment's ranges.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

namespace kvpool::transfer {

class IovecCursor {
 public:
  // `iovecs` must outlive the cursor.
  explicit IovecCursor(std::span<const iovec> iovecs) : iovecs_(iovecs) {}
  // Copies `n` bytes from `p` into the iovecs at the cursor and moves past them. Stops early at
  // the end of the iovecs (callers check the totals first).
  void CopyIn(const uint8_t* p, uint64_t n) {
    Walk(n, [&p](uint8_t* m, uint64_t k) {
      std::memcpy(m, p, k);
      p += k;
    });
  }
  // Copies `n` bytes from the iovecs at the cursor to `p` and moves past them (as CopyIn).
  void CopyOut(uint8_t* p, uint64_t n) {
    Walk(n, [&p](uint8_t* m, uint64_t k) {
      std::memcpy(p, m, k);
      p += k;
    });
  }

 private:
  template <typename Fn>
  void Walk(uint64_t n, Fn&& fn) {
    while (n > 0 && i_ < iovecs_.size()) {
      const uint64_t k = std::min<uint64_t>(n, iovecs_[i_].iov_len - at_);
      fn(static_cast<uint8_t*>(iovecs_[i_].iov_base) + at_, k);
      n -= k;
      at_ += k;
      if (at_ == iovecs_[i_].iov_len) {
        ++i_;
        at_ = 0;
      }
    }
  }

  std::span<const iovec> iovecs_;
  size_t i_ = 0;
  uint64_t at_ = 0;
};

}  // namespace kvpool::transfer
