#include "disk/read_buffers.h"

#include <algorithm>

namespace kvpool::disk {

std::shared_ptr<ReadBuffers> ReadBuffers::Create(uint64_t alignment, uint64_t max_kept_bytes) {
  return std::shared_ptr<ReadBuffers>(new ReadBuffers(alignment, max_kept_bytes));
}

std::shared_ptr<AlignedBuffer> ReadBuffers::Acquire(uint64_t size) {
  std::unique_ptr<AlignedBuffer> buffer;
  {
    std::lock_guard lock(mu_);
    // The smallest idle buffer that fits, unless it is more than twice what is asked.
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      const uint64_t s = (*it)->size();
      if (s >= size && s <= 2 * std::max<uint64_t>(size, 1) &&
          (best == idle_.end() || s < (*best)->size())) {
        best = it;
      }
    }
    if (best != idle_.end()) {
      buffer = std::move(*best);
      idle_.erase(best);
      kept_ -= buffer->size();
      ++reused_;
    }
  }
  if (buffer == nullptr) {
    constexpr uint64_t kStep = 1ull << 20;
    buffer = std::make_unique<AlignedBuffer>((size + kStep - 1) / kStep * kStep, alignment_);
  }
  AlignedBuffer* raw = buffer.release();
  return std::shared_ptr<AlignedBuffer>(
      raw, [self = shared_from_this()](AlignedBuffer* b) { self->Return(b); });
}

void ReadBuffers::Return(AlignedBuffer* buffer) {
  std::unique_ptr<AlignedBuffer> owned(buffer);
  std::lock_guard lock(mu_);
  if (owned->size() > max_kept_) return;
  kept_ += owned->size();
  idle_.push_back(std::move(owned));
  // Over the cap: drop the largest idle buffers first (a rare huge READ must not pin its size).
  while (kept_ > max_kept_) {
    auto largest = std::max_element(idle_.begin(), idle_.end(), [](const auto& a, const auto& b) {
      return a->size() < b->size();
    });
    kept_ -= (*largest)->size();
    idle_.erase(largest);
  }
}

uint64_t ReadBuffers::kept_bytes() const {
  std::lock_guard lock(mu_);
  return kept_;
}

uint64_t ReadBuffers::reused() const {
  std::lock_guard lock(mu_);
  return reused_;
}

}  // namespace kvpool::disk
