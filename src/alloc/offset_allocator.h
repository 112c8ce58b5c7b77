// Segment-space allocator: hands out byte ranges of one segment (offsets from 0 to capacity) in
// O(1) per Allocate and Free.
//
// Design (after Sebastian Aaltonen's "OffsetAllocator", written anew for 64-bit spaces):
//   * Space is managed in units of `alignment` bytes. Offsets are multiples of it and every
//     request is rounded up to it.
//   * Free ranges sit in size bins whose boundaries are small floating-point numbers of units:
//     3 mantissa bits and up to 62 exponents (496 bins in use, 512 reserved), so a bin spans at
//     most 12.5% of its minimum size. Sizes 0..15 units get one exact bin each.
//   * A two-level bitmap (one 64-bit word of non-empty bin groups, eight 64-bit words of
//     non-empty bins) finds the smallest suitable non-empty bin with two count-trailing-zeros.
//   * Each range (free or used) is a node in a growable pool. Nodes link to their address
//     neighbours so Free merges a range with free neighbours immediately: two free ranges are
//     never adjacent.
//
// Threading: NOT thread-safe. The object holds no lock; the caller must serialise every call
// (const ones included) with its own mutex, e.g. the segment's lock in the master.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace kvpool::alloc {

// One live range handed out by OffsetAllocator::Allocate. Plain value; copy it freely, but pass
// exactly one copy to Free.
struct Allocation {
  uint64_t offset = 0;  // Bytes from the start of the segment; a multiple of the alignment.
  uint64_t size = 0;    // Bytes reserved: the request rounded up to the alignment.
  uint32_t node = 0;    // Internal handle used by Free; meaningless to the caller.
};

class OffsetAllocator {
 public:
  // Manages [0, capacity) rounded down to a multiple of `alignment`, and to at most 2^56 - 1
  // alignment units; the tail below one alignment unit is never handed out (see capacity()). A capacity below `alignment` gives an
  // allocator on which every Allocate fails.
  // REQUIRES: alignment is a power of two (1 is allowed). Violations abort the process, in
  // release builds too (this is a one-time check).
  // May throw std::bad_alloc.
  explicit OffsetAllocator(uint64_t capacity, uint64_t alignment = 64);

  OffsetAllocator(const OffsetAllocator&) = delete;
  OffsetAllocator& operator=(const OffsetAllocator&) = delete;
  // A moved-from allocator may only be destroyed or assigned to.
  OffsetAllocator(OffsetAllocator&&) = default;
  OffsetAllocator& operator=(OffsetAllocator&&) = default;

  // Reserves `size` bytes rounded up to the alignment and returns the range. O(1): at most
  // two bitmap scans and one list pop; node storage growth is amortised O(1).
  //
  // Returns std::nullopt, changing nothing, when size == 0, when the rounded size exceeds
  // free_bytes(), when no free range is found by the rule below, or (only in theory) when the
  // split would need a node beyond the pool's limit of 2^32 - 1 nodes.
  //
  // Success rule. Let B be the bin holding ranges of exactly the rounded size. The request
  // succeeds if (a) any free range lies in a bin whose minimum size is >= the rounded size, or
  // (b) the first range listed in B is large enough. Known trade-off of the bin scheme: a range
  // in B that is large enough but not first in its list is not found, so a request can fail
  // while a fitting range (at most 12.5% larger than the request) exists. largest_free_range()
  // is the bound below which this cannot happen.
  //
  // Search order, best fit first: (b), then the smallest non-empty bin satisfying (a). The
  // chosen range is split: the request takes its start, the rest stays free.
  //
  // May throw std::bad_alloc when the node pool grows; the allocator is then unchanged.
  std::optional<Allocation> Allocate(uint64_t size);

  // Returns the range to the free space and merges it with free neighbours. O(1).
  // REQUIRES: `a` was returned by Allocate on this allocator and has not been freed since.
  // Misuse that is cheap to see (stale or unknown handle, double free, offset or size not
  // matching the handle) fails an assert in debug builds; in release builds such a call is
  // ignored and changes nothing. A double free is undetectable once the same handle has been
  // handed out again for the very same offset and size.
  void Free(const Allocation& a);

  // Usable bytes: the constructor's capacity rounded down to the alignment.
  uint64_t capacity() const { return capacity_units_ << shift_; }
  uint64_t alignment() const { return uint64_t{1} << shift_; }
  // Bytes in live allocations (sum of their rounded sizes). Exact.
  uint64_t used_bytes() const { return used_units_ << shift_; }
  // capacity() - used_bytes(). Exact, but possibly fragmented.
  uint64_t free_bytes() const { return (capacity_units_ - used_units_) << shift_; }
  // The largest size for which Allocate is guaranteed to succeed right now; 0 if none. O(1).
  // Any Allocate(size <= largest_free_range()) succeeds. It is a lower bound of the largest
  // contiguous free range, which may be up to 12.5% larger; an Allocate above this bound may
  // still succeed by rule (b). With one free range (e.g. nothing allocated) it is exact.
  uint64_t largest_free_range() const;
  // Number of live allocations.
  size_t allocation_count() const { return allocation_count_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr uint32_t kNumWords = 8;  // 8 x 64 = 512 bins.

  enum class NodeState : uint8_t { kFree, kUsed, kPooled };

  // Most units one allocator manages: `size` is a 56-bit field so that `state` fits in the same
  // eight bytes and a node takes 32 bytes (one per live allocation: part of the master's
  // per-object metadata budget). 2^56 units of the smallest alignment is 4 EiB.
  static constexpr uint64_t kMaxUnits = (uint64_t{1} << 56) - 1;

  struct Node {
    uint64_t offset = 0;     // Units.
    uint64_t size : 56 = 0;  // Units.
    NodeState state = NodeState::kPooled;
    uint32_t bin_prev = kNone;  // Free: links in its bin's list. Pooled: bin_next links the pool.
    uint32_t bin_next = kNone;
    uint32_t addr_prev = kNone;  // Address neighbours (free or used); kNone at the ends.
    uint32_t addr_next = kNone;
  };
  static_assert(sizeof(Node) == 32, "a node per live allocation: keep it at 32 bytes");

  uint32_t NewNode(uint64_t offset, uint64_t size, NodeState state);
  void ReleaseNode(uint32_t index);
  bool ReserveNode();
  void InsertFree(uint32_t index);
  void RemoveFree(uint32_t index);
  uint32_t FindFreeNode(uint64_t units) const;
  uint32_t FirstNonEmptyBinAtOrAbove(uint32_t bin) const;
  void SplitTail(uint32_t index, uint64_t units);
  bool IsLiveAllocation(const Allocation& a) const;

  std::vector<Node> nodes_;
  uint32_t pool_head_ = kNone;  // Pooled (unused) nodes, linked through bin_next.
  std::array<uint32_t, kNumWords * 64> bin_heads_;
  std::array<uint64_t, kNumWords> bin_words_{};  // Bit b of word w: bin 64*w+b non-empty.
  uint64_t word_mask_ = 0;                       // Bit w: bin_words_[w] != 0.
  uint64_t capacity_units_ = 0;
  uint64_t used_units_ = 0;
  size_t allocation_count_ = 0;
  uint32_t shift_ = 0;  // log2(alignment).
};

}  // namespace kvpool::alloc
