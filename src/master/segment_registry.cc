#include "master/segment_registry.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "rpc/endpoint.h"

namespace kvpool::master {
namespace {

constexpr size_t kMaxSegmentNameBytes = 1024;

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return rng;
}

bool Contains(std::span<const uint64_t> ids, uint64_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

SegmentRegistry::SegmentRegistry(uint64_t alignment) : alignment_(alignment) {}

Result<SegmentRegistry::Mounted> SegmentRegistry::Mount(std::string_view name,
                                                        std::string_view client_id, uint32_t owner,
                                                        std::string_view endpoint, uint64_t size,
                                                        uint64_t incarnation, bool accepting,
                                                        uint32_t tier, std::string_view from_host,
                                                        bool records_writes) {
  if (name.empty() || name.size() > kMaxSegmentNameBytes) {
    return Status(ErrorCode::INVALID_PARAMS, fmt::format("segment name must be 1..{} bytes, got {}",
                                                         kMaxSegmentNameBytes, name.size()));
  }
  if (size < alignment_) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("segment={} size {} is below the allocation alignment {}", name, size,
                              alignment_));
  }
  std::unique_lock lock(map_mu_);
  Mounted out;
  auto it = by_name_.find(std::string(name));
  if (it != by_name_.end()) {
    Segment& s = *it->second;
    const bool restarted = incarnation != 0 && s.incarnation != 0 && incarnation != s.incarnation &&
                           s.endpoint == endpoint;
    if (restarted) {
      // The host at this endpoint serves new memory now: what the old segment held is gone.
      out.replaced = s.id;
      EraseLocked(&s);
    } else if (s.client_id != client_id) {
      return Status(ErrorCode::SEGMENT_ALREADY_EXISTS,
                    fmt::format("segment={} is mounted by client={}", name, s.client_id));
    } else if (s.endpoint != endpoint || s.capacity != (size & ~(alignment_ - 1)) ||
               s.incarnation != incarnation) {
      return Status(
          ErrorCode::SEGMENT_ALREADY_EXISTS,
          fmt::format("segment={} is mounted with endpoint={} size={} "
                      "incarnation={:016x}; unmount it before mounting endpoint={} "
                      "size={} incarnation={:016x}",
                      name, s.endpoint, s.capacity, s.incarnation, endpoint, size, incarnation));
    } else {
      s.owner = owner;
      out.id = s.id;
      return out;
    }
  }
  auto seg = std::make_unique<Segment>(next_id_++, size, alignment_);
  seg->name = std::string(name);
  seg->endpoint = std::string(endpoint);
  if (auto ep = rpc::ParseEndpoint(endpoint, 0, "segment endpoint"); ep.ok()) seg->host = ep->host;
  seg->client_id = std::string(client_id);
  seg->from_host = std::string(from_host);
  seg->incarnation = incarnation;
  seg->owner = owner;
  seg->tier = tier;
  seg->records_writes = records_writes;
  // A host that lists writes keeps an object list from its mount on: calls wait for it before
  // its first acknowledgement too (right after a master restart, say).
  seg->journal_acked = records_writes;
  seg->accepting.store(accepting && tier == kTierDram, std::memory_order_relaxed);
  out.id = seg->id;
  by_id_[out.id] = seg.get();
  list_.push_back(seg.get());
  by_name_.emplace(seg->name, std::move(seg));
  return out;
}

void SegmentRegistry::EraseLocked(Segment* s) {
  if (s->suspect.load(std::memory_order_relaxed)) suspects_.fetch_sub(1, std::memory_order_relaxed);
  by_id_.erase(s->id);
  std::erase(list_, s);
  by_name_.erase(s->name);  // destroys *s
}

Result<uint64_t> SegmentRegistry::Unmount(std::string_view name, std::string_view client_id) {
  std::unique_lock lock(map_mu_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) {
    return Status(ErrorCode::SEGMENT_NOT_FOUND, fmt::format("segment={} is not mounted", name));
  }
  if (it->second->client_id != client_id) {
    return Status(ErrorCode::ILLEGAL_CLIENT,
                  fmt::format("segment={} is mounted by client={}, not client={}", name,
                              it->second->client_id, client_id));
  }
  uint64_t id = it->second->id;
  EraseLocked(it->second.get());
  return id;
}

std::vector<uint64_t> SegmentRegistry::UnmountOwnedBy(uint32_t owner) {
  std::unique_lock lock(map_mu_);
  std::vector<uint64_t> ids;
  for (auto it = by_name_.begin(); it != by_name_.end();) {
    Segment* s = it->second.get();
    if (s->owner != owner) {
      ++it;
      continue;
    }
    ids.push_back(s->id);
    by_id_.erase(s->id);
    std::erase(list_, s);
    it = by_name_.erase(it);
  }
  return ids;
}

bool SegmentRegistry::TryAllocate(Segment& s, uint64_t size, Placement* out) {
  if (s.tier != kTierDram) return false;  // a disk tier's host places there itself
  std::lock_guard lock(s.mu);
  auto a = s.allocator.Allocate(size);
  if (!a) return false;
  s.used.store(s.allocator.used_bytes(), std::memory_order_relaxed);
  s.replicas.fetch_add(1, std::memory_order_relaxed);
  out->ref = ReplicaRef{s.id, a->offset, a->node, 0};
  out->segment_name = s.name;
  out->endpoint = s.endpoint;
  out->incarnation = s.incarnation;
  out->records_writes = s.records_writes;
  out->journal_seq = s.journal.last_seq();
  return true;
}

std::vector<Placement> SegmentRegistry::Allocate(uint64_t size, uint32_t replica_num,
                                                 std::span<const std::string_view> preferred,
                                                 std::span<const uint64_t> excluded) {
  PlacementRequest request;
  request.preferred = preferred;
  request.excluded = excluded;
  return AllocateReplicas(size, replica_num, request);
}

std::vector<Placement> SegmentRegistry::AllocateReplicas(uint64_t size, uint32_t replica_num,
                                                         const PlacementRequest& request) {
  std::vector<Placement> out;
  if (size == 0 || replica_num == 0) return out;
  std::vector<uint64_t> used_ids(request.excluded.begin(), request.excluded.end());
  const uint64_t need = Reserved(size);
  std::shared_lock lock(map_mu_);
  for (std::string_view name : request.preferred) {
    if (out.size() >= replica_num) break;
    auto it = by_name_.find(std::string(name));
    if (it == by_name_.end() || Contains(used_ids, it->second->id)) continue;
    if (!it->second->accepting.load(std::memory_order_relaxed)) continue;
    if (it->second->suspect.load(std::memory_order_relaxed)) continue;  // host unreachable
    Placement p;
    if (TryAllocate(*it->second, size, &p)) {
      used_ids.push_back(p.ref.segment_id);
      out.push_back(std::move(p));
    }
  }
  if (out.size() >= replica_num) return out;
  // Candidates with enough free bytes (a cheap filter; the allocator has the last word).
  std::vector<Segment*> candidates;
  std::vector<PlacementCandidate> views;
  for (Segment* s : list_) {
    uint64_t used = s->used.load(std::memory_order_relaxed);
    if (s->capacity - used < need || Contains(used_ids, s->id)) continue;
    if (!s->accepting.load(std::memory_order_relaxed)) continue;  // restoring or draining
    if (s->suspect.load(std::memory_order_relaxed)) continue;     // host unreachable
    candidates.push_back(s);
    views.push_back(
        {s->capacity, used, !request.client_host.empty() && s->host == request.client_host});
  }
  for (size_t i : PlacementOrder(views, request.strategy, request.prefer_same_host, Rng())) {
    if (out.size() >= replica_num) break;
    Placement p;
    if (TryAllocate(*candidates[i], size, &p)) out.push_back(std::move(p));
  }
  return out;
}

uint64_t SegmentRegistry::FreeLocked(Segment& s, const ReplicaRef& r, uint64_t object_size) {
  uint64_t seq;
  {
    std::lock_guard lock(s.mu);
    if (s.tier != kTierDram) {
      // Its host owns the space: the journal's FREE tells it to release the range.
      s.used.fetch_sub(std::min(s.used.load(std::memory_order_relaxed), Reserved(object_size)),
                       std::memory_order_relaxed);
    } else {
      s.allocator.Free(alloc::Allocation{r.offset, Reserved(object_size), r.alloc_node});
      s.used.store(s.allocator.used_bytes(), std::memory_order_relaxed);
    }
    s.replicas.fetch_sub(1, std::memory_order_relaxed);
    s.journal.AppendFree(r.offset, object_size);
    seq = s.journal.last_seq();
  }
  journal_signal_.Notify();
  return seq;
}

uint64_t SegmentRegistry::Free(const ReplicaRef& r, uint64_t object_size) {
  std::shared_lock lock(map_mu_);
  auto it = by_id_.find(r.segment_id);
  return it != by_id_.end() ? FreeLocked(*it->second, r, object_size) : 0;
}

void SegmentRegistry::FreeLater(const ReplicaRef& r, uint64_t object_size, int64_t release_at_ns) {
  std::lock_guard lock(deferred_mu_);
  deferred_.push_back(Deferred{r, object_size, release_at_ns});
}

size_t SegmentRegistry::ReleaseDue(int64_t now_ns) {
  std::vector<Deferred> due;
  {
    std::lock_guard lock(deferred_mu_);
    auto mid = std::partition(deferred_.begin(), deferred_.end(),
                              [now_ns](const Deferred& d) { return d.release_at_ns > now_ns; });
    due.assign(mid, deferred_.end());
    deferred_.erase(mid, deferred_.end());
  }
  for (const Deferred& d : due) Free(d.ref, d.object_size);
  return due.size();
}

uint64_t SegmentRegistry::RecordCommit(const ReplicaRef& r, std::string_view key, uint64_t size,
                                       uint64_t checksum, uint8_t pin_flags) {
  std::shared_lock lock(map_mu_);
  auto it = by_id_.find(r.segment_id);
  if (it == by_id_.end()) return 0;
  uint64_t seq;
  {
    std::lock_guard seg_lock(it->second->mu);
    it->second->journal.AppendCommit(r.offset, size, key, checksum, pin_flags);
    seq = it->second->journal.last_seq();
  }
  journal_signal_.Notify();
  return seq;
}

bool SegmentRegistry::AckJournal(std::string_view name, std::string_view client_id,
                                 uint64_t applied_seq) {
  bool advanced;
  {
    std::shared_lock lock(map_mu_);
    auto it = by_name_.find(std::string(name));
    if (it == by_name_.end() || it->second->client_id != client_id) return false;
    Segment& s = *it->second;
    std::lock_guard seg_lock(s.mu);
    const uint64_t before = s.journal.acked_seq();
    s.journal.Ack(applied_seq);
    advanced = s.journal.acked_seq() != before || !s.journal_acked;
    s.journal_acked = true;
  }
  if (advanced) ack_signal_.Notify();
  return true;
}

bool SegmentRegistry::CommitAcked(uint64_t segment_id, uint64_t seq) const {
  std::shared_lock lock(map_mu_);
  auto it = by_id_.find(segment_id);
  if (it == by_id_.end()) return true;
  std::lock_guard seg_lock(it->second->mu);
  return !it->second->journal_acked || it->second->journal.acked_seq() >= seq;
}

bool SegmentRegistry::AnyAccepting() const {
  std::shared_lock lock(map_mu_);
  for (const auto& [id, seg] : by_id_) {
    if (seg->accepting.load(std::memory_order_relaxed)) return true;
  }
  return false;
}

bool SegmentRegistry::HostsSegments(std::string_view client_id) const {
  std::shared_lock lock(map_mu_);
  for (const auto& [id, seg] : by_id_) {
    if (seg->client_id == client_id) return true;
  }
  return false;
}

bool SegmentRegistry::CollectJournal(std::string_view name, std::string_view client_id,
                                     uint64_t applied_seq, size_t max_entries,
                                     rpc::SegmentJournal* out) {
  std::shared_lock lock(map_mu_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end() || it->second->client_id != client_id) return false;
  Segment& s = *it->second;
  std::lock_guard seg_lock(s.mu);
  s.journal.Ack(applied_seq);
  s.journal_acked = true;
  out->set_segment_name(s.name);
  s.journal.Collect(applied_seq, max_entries, out);
  return true;
}

bool SegmentRegistry::JournalHasAfter(std::string_view name, std::string_view client_id,
                                      uint64_t applied_seq) const {
  std::shared_lock lock(map_mu_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end() || it->second->client_id != client_id) return true;
  std::lock_guard seg_lock(it->second->mu);
  return it->second->journal.HasAfter(applied_seq);
}

Status SegmentRegistry::SetAccepting(std::string_view name, bool accepting,
                                     std::string_view client_id) {
  std::shared_lock lock(map_mu_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) {
    return Status(ErrorCode::SEGMENT_NOT_FOUND, fmt::format("segment={} is not mounted", name));
  }
  if (!client_id.empty() && it->second->client_id != client_id) {
    return Status(ErrorCode::ILLEGAL_CLIENT,
                  fmt::format("segment={} is mounted by client={}, not client={}", name,
                              it->second->client_id, client_id));
  }
  it->second->accepting.store(accepting && it->second->tier == kTierDram,
                              std::memory_order_relaxed);
  return Status::Ok();
}

std::vector<std::optional<uint32_t>> SegmentRegistry::Restore(
    uint64_t segment_id, std::span<const RestoredRange> ranges) {
  std::vector<std::optional<uint32_t>> out(ranges.size());
  std::shared_lock lock(map_mu_);
  auto it = by_id_.find(segment_id);
  if (it == by_id_.end()) return out;
  Segment& s = *it->second;
  std::lock_guard seg_lock(s.mu);
  if (s.allocator.used_bytes() != 0) return out;
  // A fresh allocator hands out its single free range from the start, in order: allocating
  // the gaps (as fillers, freed at the end) and the ranges in ascending order rebuilds exactly
  // the allocations the previous master made.
  std::vector<alloc::Allocation> fillers;
  uint64_t cursor = 0;
  size_t restored = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const RestoredRange& r = ranges[i];
    if (r.offset < cursor || !RangeFits(s.capacity, r.offset, r.size)) continue;
    const uint64_t reserved = Reserved(r.size);
    if (r.offset > cursor) {
      auto filler = s.allocator.Allocate(r.offset - cursor);
      if (!filler || filler->offset != cursor) {
        if (filler) s.allocator.Free(*filler);
        break;
      }
      fillers.push_back(*filler);
    }
    auto a = s.allocator.Allocate(r.size);
    if (!a || a->offset != r.offset) {
      if (a) s.allocator.Free(*a);
      break;
    }
    out[i] = a->node;
    cursor = r.offset + reserved;
    ++restored;
  }
  for (const alloc::Allocation& f : fillers) s.allocator.Free(f);
  s.used.store(s.allocator.used_bytes(), std::memory_order_relaxed);
  s.replicas.fetch_add(restored, std::memory_order_relaxed);
  return out;
}

bool SegmentRegistry::Describe(uint64_t segment_id, std::string* name, std::string* endpoint,
                               uint64_t* incarnation) const {
  std::shared_lock lock(map_mu_);
  auto it = by_id_.find(segment_id);
  if (it == by_id_.end()) return false;
  *name = it->second->name;
  *endpoint = it->second->endpoint;
  if (incarnation != nullptr) *incarnation = it->second->incarnation;
  return true;
}

bool SegmentRegistry::DescribeByName(std::string_view name, Description* out) const {
  std::shared_lock lock(map_mu_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return false;
  out->client_id = it->second->client_id;
  out->endpoint = it->second->endpoint;
  out->from_host = it->second->from_host;
  out->incarnation = it->second->incarnation;
  return true;
}

std::vector<SegmentStats> SegmentRegistry::Stats() const {
  std::shared_lock lock(map_mu_);
  std::vector<SegmentStats> out;
  out.reserve(list_.size());
  for (Segment* s : list_) {
    SegmentStats& st = out.emplace_back();
    st.id = s->id;
    st.name = s->name;
    st.endpoint = s->endpoint;
    st.client_id = s->client_id;
    st.incarnation = s->incarnation;
    st.capacity = s->capacity;
    st.used = s->used.load(std::memory_order_relaxed);
    st.replicas = s->replicas.load(std::memory_order_relaxed);
    st.accepting = s->accepting.load(std::memory_order_relaxed);
    st.tier = s->tier;
    st.suspect = s->suspect.load(std::memory_order_relaxed);
    std::lock_guard seg_lock(s->mu);
    st.unreachable_reports = s->unreachable_reports;
    st.last_unreachable_by = s->last_unreachable_by;
    st.last_unreachable_unix_ms = s->last_unreachable_unix_ms;
  }
  return out;
}

PoolUsage SegmentRegistry::Usage() const {
  std::shared_lock lock(map_mu_);
  PoolUsage u;
  for (const Segment* s : list_) {
    if (s->tier != kTierDram) continue;  // never placed on: not the pool's DRAM
    uint64_t cap = s->capacity;
    u.capacity += cap;
    u.used += s->used.load(std::memory_order_relaxed);
    u.largest_segment = std::max(u.largest_segment, cap);
  }
  u.segments = static_cast<size_t>(std::count_if(
      list_.begin(), list_.end(), [](const Segment* s) { return s->tier == kTierDram; }));
  return u;
}

Result<uint64_t> SegmentRegistry::OwnSegment(std::string_view name, std::string_view client_id,
                                             uint32_t tier, uint64_t* capacity) const {
  std::shared_lock lock(map_mu_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) {
    return Status(ErrorCode::SEGMENT_NOT_FOUND, fmt::format("segment={} is not mounted", name));
  }
  if (it->second->client_id != client_id || it->second->tier != tier) {
    return Status(ErrorCode::ILLEGAL_CLIENT,
                  fmt::format("segment={} is not a {} mounted by client={}", name,
                              tier == kTierDisk ? "disk tier" : "DRAM segment", client_id));
  }
  if (capacity != nullptr) *capacity = it->second->capacity;
  return it->second->id;
}

std::vector<uint64_t> SegmentRegistry::DramSegmentsWithDiskTier() const {
  std::shared_lock lock(map_mu_);
  std::vector<uint64_t> out;
  for (const auto& [name, seg] : by_name_) {
    if (seg->tier != kTierDram) continue;
    auto disk = by_name_.find(name + "#disk");
    if (disk != by_name_.end() && disk->second->tier == kTierDisk &&
        disk->second->client_id == seg->client_id) {
      out.push_back(seg->id);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool SegmentRegistry::AnyDiskTier() const {
  std::shared_lock lock(map_mu_);
  for (const auto& [id, seg] : by_id_) {
    if (seg->tier == kTierDisk) return true;
  }
  return false;
}

bool SegmentRegistry::AllocateOn(uint64_t segment_id, uint64_t size, Placement* out) {
  std::shared_lock lock(map_mu_);
  auto it = by_id_.find(segment_id);
  if (it == by_id_.end() || !it->second->accepting.load(std::memory_order_relaxed)) return false;
  return TryAllocate(*it->second, size, out);
}

void SegmentRegistry::CountDiskReplica(uint64_t segment_id, uint64_t object_size, bool added) {
  std::shared_lock lock(map_mu_);
  auto it = by_id_.find(segment_id);
  if (it == by_id_.end()) return;
  Segment& s = *it->second;
  std::lock_guard seg_lock(s.mu);
  uint64_t r = Reserved(object_size);
  if (added) {
    s.used.fetch_add(r, std::memory_order_relaxed);
    s.replicas.fetch_add(1, std::memory_order_relaxed);
  } else {
    s.used.fetch_sub(std::min(s.used.load(std::memory_order_relaxed), r),
                     std::memory_order_relaxed);
    s.replicas.fetch_sub(1, std::memory_order_relaxed);
  }
}

uint32_t SegmentRegistry::TierOf(uint64_t segment_id) const {
  std::shared_lock lock(map_mu_);
  auto it = by_id_.find(segment_id);
  return it == by_id_.end() ? kTierDram : it->second->tier;
}

bool SegmentRegistry::MarkSuspect(std::string_view name, std::string_view reporter,
                                  int64_t unix_ms) {
  std::shared_lock lock(map_mu_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return false;
  {
    std::lock_guard seg_lock(it->second->mu);
    ++it->second->unreachable_reports;
    it->second->last_unreachable_by = reporter;
    it->second->last_unreachable_unix_ms = unix_ms;
  }
  if (!it->second->suspect.exchange(true, std::memory_order_relaxed)) {
    suspects_.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

size_t SegmentRegistry::ClearSuspect(uint32_t owner) {
  if (suspects_.load(std::memory_order_relaxed) == 0) return 0;
  size_t cleared = 0;
  std::shared_lock lock(map_mu_);
  for (Segment* s : list_) {
    if (s->owner != owner || !s->suspect.exchange(false, std::memory_order_relaxed)) continue;
    suspects_.fetch_sub(1, std::memory_order_relaxed);
    ++cleared;
  }
  return cleared;
}

std::vector<uint64_t> SegmentRegistry::IdsOf(std::span<const std::string> names) const {
  std::vector<uint64_t> ids;
  if (names.empty()) return ids;
  std::shared_lock lock(map_mu_);
  for (const std::string& name : names) {
    auto it = by_name_.find(name);
    if (it != by_name_.end()) ids.push_back(it->second->id);
  }
  return ids;
}

}  // namespace kvpool::master
