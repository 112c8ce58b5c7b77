// Aligned buffers for disk reads, kept for reuse. A READ of a disk tier needs an O_DIRECT
// buffer as large as its ranges (tens of MiB for a batch); a fresh allocation of that size is
// a fresh mapping, and every 4 KiB of it costs a page fault and a page zeroing before the disk
// can fill it — as much time again as the copy to the socket. Buffers come back when the last
// holder (the reply being sent) lets go.
//
// Threading: thread-safe. Ownership: the pool is shared (Create); buffers handed out keep it
// alive, so they may outlive the pool's owner.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "disk/disk_tier.h"

namespace kvpool::disk {

class ReadBuffers : public std::enable_shared_from_this<ReadBuffers> {
 public:
  // Keeps at most `max_kept_bytes` of idle buffers (the largest idle ones go first when over).
  static std::shared_ptr<ReadBuffers> Create(uint64_t alignment, uint64_t max_kept_bytes);

  // A buffer of at least `size` bytes (an idle one when one fits without wasting more than its
  // size again, else a new one rounded up to 1 MiB). May throw std::bad_alloc.
  std::shared_ptr<AlignedBuffer> Acquire(uint64_t size);

  uint64_t kept_bytes() const;  // idle bytes held
  uint64_t reused() const;      // Acquire calls served by an idle buffer

 private:
  ReadBuffers(uint64_t alignment, uint64_t max_kept_bytes)
      : alignment_(alignment), max_kept_(max_kept_bytes) {}
  void Return(AlignedBuffer* buffer);

  const uint64_t alignment_;
  const uint64_t max_kept_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<AlignedBuffer>> idle_;  // guarded by mu_
  uint64_t kept_ = 0;                                 // guarded by mu_
  uint64_t reused_ = 0;                               // guarded by mu_
};

}  // namespace kvpool::disk
