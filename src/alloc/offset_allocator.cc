#include "alloc/offset_allocator.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdio>
#include <cstdlib>

namespace kvpool::alloc {
namespace {

// Bin numbers are small floating-point numbers of units: bin = exponent * 8 + mantissa.
// Exponent 0 holds sizes 0..7 exactly; exponent e >= 1 holds sizes (8 + m) << (e - 1).
constexpr uint32_t kMantissaBits = 3;
constexpr uint64_t kMantissaValue = uint64_t{1} << kMantissaBits;
constexpr uint64_t kMantissaMask = kMantissaValue - 1;

// The bin whose size range contains `units`: its minimum size is <= units.
constexpr uint32_t BinRoundDown(uint64_t units) {
  if (units < kMantissaValue) return static_cast<uint32_t>(units);
  const uint32_t top_bit = static_cast<uint32_t>(std::bit_width(units)) - 1;
  const uint32_t mantissa_shift = top_bit - kMantissaBits;
  const uint64_t mantissa = (units >> mantissa_shift) & kMantissaMask;
  return ((mantissa_shift + 1) << kMantissaBits) | static_cast<uint32_t>(mantissa);
}

// Smallest size (units) of `bin`. REQUIRES: bin <= BinRoundDown(UINT64_MAX).
constexpr uint64_t BinMinSize(uint32_t bin) {
  const uint32_t exponent = bin >> kMantissaBits;
  const uint64_t mantissa = bin & kMantissaMask;
  if (exponent == 0) return mantissa;
  return (kMantissaValue | mantissa) << (exponent - 1);
}

static_assert(BinRoundDown(UINT64_MAX) < 8 * 64, "bins must fit the two-level bitmap");

}  // namespace

OffsetAllocator::OffsetAllocator(uint64_t capacity, uint64_t alignment) {
  if (!std::has_single_bit(alignment)) {
    std::fprintf(stderr, "OffsetAllocator: alignment=%llu is not a power of two\n",
                 static_cast<unsigned long long>(alignment));
    std::abort();
  }
  shift_ = static_cast<uint32_t>(std::countr_zero(alignment));
  capacity_units_ = std::min(capacity >> shift_, kMaxUnits);
  bin_heads_.fill(kNone);
  nodes_.reserve(64);
  if (capacity_units_ == 0) return;
  ReserveNode();
  InsertFree(NewNode(0, capacity_units_, NodeState::kFree));
}

std::optional<Allocation> OffsetAllocator::Allocate(uint64_t size) {
  if (size == 0) return std::nullopt;
  const uint64_t units = (size >> shift_) + ((size & (alignment() - 1)) != 0 ? 1 : 0);
  if (units > capacity_units_ - used_units_) return std::nullopt;
  const uint32_t index = FindFreeNode(units);
  if (index == kNone) return std::nullopt;
  // Make sure the split cannot fail before anything changes.
  if (nodes_[index].size > units && !ReserveNode()) return std::nullopt;

  RemoveFree(index);
  if (nodes_[index].size > units) SplitTail(index, units);
  Node& node = nodes_[index];
  node.state = NodeState::kUsed;
  used_units_ += units;
  ++allocation_count_;
  return Allocation{node.offset << shift_, units << shift_, index};
}

void OffsetAllocator::Free(const Allocation& a) {
  if (!IsLiveAllocation(a)) {
    assert(false && "OffsetAllocator::Free: unknown, stale or already freed allocation");
    return;
  }
  const uint32_t index = a.node;
  used_units_ -= nodes_[index].size;
  --allocation_count_;

  const uint32_t prev = nodes_[index].addr_prev;
  if (prev != kNone && nodes_[prev].state == NodeState::kFree) {
    RemoveFree(prev);
    Node& node = nodes_[index];
    node.offset = nodes_[prev].offset;
    node.size += nodes_[prev].size;
    node.addr_prev = nodes_[prev].addr_prev;
    if (node.addr_prev != kNone) nodes_[node.addr_prev].addr_next = index;
    ReleaseNode(prev);
  }
  const uint32_t next = nodes_[index].addr_next;
  if (next != kNone && nodes_[next].state == NodeState::kFree) {
    RemoveFree(next);
    Node& node = nodes_[index];
    node.size += nodes_[next].size;
    node.addr_next = nodes_[next].addr_next;
    if (node.addr_next != kNone) nodes_[node.addr_next].addr_prev = index;
    ReleaseNode(next);
  }
  InsertFree(index);
}

uint64_t OffsetAllocator::largest_free_range() const {
  if (word_mask_ == 0) return 0;
  const uint32_t word = 63 - static_cast<uint32_t>(std::countl_zero(word_mask_));
  const uint32_t bit = 63 - static_cast<uint32_t>(std::countl_zero(bin_words_[word]));
  // Every request up to the head's size succeeds: one in this bin by the head check, one in a
  // lower bin by the round-up search, which reaches this bin at the latest.
  return nodes_[bin_heads_[word * 64 + bit]].size << shift_;
}

uint32_t OffsetAllocator::FindFreeNode(uint64_t units) const {
  // Best fit: the head of the request's own bin, if it happens to be large enough.
  const uint32_t own_bin = BinRoundDown(units);
  const uint32_t head = bin_heads_[own_bin];
  if (head != kNone && nodes_[head].size >= units) return head;
  // Otherwise the smallest bin whose every range is large enough.
  const uint32_t first_fit_bin = BinMinSize(own_bin) == units ? own_bin : own_bin + 1;
  const uint32_t bin = FirstNonEmptyBinAtOrAbove(first_fit_bin);
  return bin == kNone ? kNone : bin_heads_[bin];
}

uint32_t OffsetAllocator::FirstNonEmptyBinAtOrAbove(uint32_t bin) const {
  const uint32_t word = bin / 64;
  if (word >= kNumWords) return kNone;
  const uint64_t here = bin_words_[word] & (~uint64_t{0} << (bin % 64));
  if (here != 0) return word * 64 + static_cast<uint32_t>(std::countr_zero(here));
  const uint64_t above = word_mask_ & (~uint64_t{0} << (word + 1));  // word + 1 <= 8.
  if (above == 0) return kNone;
  const uint32_t next_word = static_cast<uint32_t>(std::countr_zero(above));
  return next_word * 64 + static_cast<uint32_t>(std::countr_zero(bin_words_[next_word]));
}

// Cuts `index` (a node already out of its bin) to `units` and puts the tail in a new free node.
// REQUIRES: the pool holds a node (ReserveNode succeeded).
void OffsetAllocator::SplitTail(uint32_t index, uint64_t units) {
  const uint32_t tail =
      NewNode(nodes_[index].offset + units, nodes_[index].size - units, NodeState::kFree);
  Node& node = nodes_[index];
  nodes_[tail].addr_prev = index;
  nodes_[tail].addr_next = node.addr_next;
  if (node.addr_next != kNone) nodes_[node.addr_next].addr_prev = tail;
  node.addr_next = tail;
  node.size = units;
  InsertFree(tail);
}

bool OffsetAllocator::IsLiveAllocation(const Allocation& a) const {
  if (a.node >= nodes_.size()) return false;
  const Node& node = nodes_[a.node];
  return node.state == NodeState::kUsed && (node.offset << shift_) == a.offset &&
         (node.size << shift_) == a.size;
}

bool OffsetAllocator::ReserveNode() {
  if (pool_head_ != kNone) return true;
  if (nodes_.size() >= kNone) return false;
  nodes_.emplace_back();  // May throw; nothing has changed yet.
  ReleaseNode(static_cast<uint32_t>(nodes_.size() - 1));
  return true;
}

// REQUIRES: the pool holds a node.
uint32_t OffsetAllocator::NewNode(uint64_t offset, uint64_t size, NodeState state) {
  const uint32_t index = pool_head_;
  assert(index != kNone);
  pool_head_ = nodes_[index].bin_next;
  nodes_[index] = Node{.offset = offset, .size = size, .state = state};
  return index;
}

void OffsetAllocator::ReleaseNode(uint32_t index) {
  Node& node = nodes_[index];
  node.state = NodeState::kPooled;
  node.bin_prev = kNone;
  node.bin_next = pool_head_;
  pool_head_ = index;
}

void OffsetAllocator::InsertFree(uint32_t index) {
  const uint32_t bin = BinRoundDown(nodes_[index].size);
  const uint32_t head = bin_heads_[bin];
  Node& node = nodes_[index];
  node.state = NodeState::kFree;
  node.bin_prev = kNone;
  node.bin_next = head;
  if (head != kNone) nodes_[head].bin_prev = index;
  bin_heads_[bin] = index;
  bin_words_[bin / 64] |= uint64_t{1} << (bin % 64);
  word_mask_ |= uint64_t{1} << (bin / 64);
}

// REQUIRES: `index` is free and its size unchanged since InsertFree.
void OffsetAllocator::RemoveFree(uint32_t index) {
  const Node& node = nodes_[index];
  if (node.bin_next != kNone) nodes_[node.bin_next].bin_prev = node.bin_prev;
  if (node.bin_prev != kNone) {
    nodes_[node.bin_prev].bin_next = node.bin_next;
    return;
  }
  const uint32_t bin = BinRoundDown(node.size);
  bin_heads_[bin] = node.bin_next;
  if (node.bin_next != kNone) return;
  bin_words_[bin / 64] &= ~(uint64_t{1} << (bin % 64));
  if (bin_words_[bin / 64] == 0) word_mask_ &= ~(uint64_t{1} << (bin / 64));
}

}  // namespace kvpool::alloc
