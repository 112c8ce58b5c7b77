// DiskHost's promotion of hot disk-tier objects back into its DRAM segment (disk_host.h,
// "Promotion"; the master's side is master/master_promote.cc).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "hosting/disk_host.h"

namespace kvpool::hosting {
namespace {

// A commit the master could not take because a reader held the object is sent again after
// this long, at most this many times; then the reservation is cancelled (the object stays on
// disk, and its next hits try again).
constexpr auto kCommitRetryDelay = std::chrono::milliseconds(20);
constexpr int kMaxCommitTries = 10;
// A reserved range is filled only this soon after its reservation was asked for: the master
// frees reservations it has held for 30 s (MasterCore::kPromotionTimeoutNs), and a range freed
// there may belong to another object by the time a late fill would land in it.
constexpr auto kFillWithin = std::chrono::seconds(10);

rpc::StoredObject StoredAt(const disk::DiskObject& o, uint64_t offset) {
  rpc::StoredObject so;
  so.set_key(o.key);
  so.set_offset(offset);
  so.set_size(o.size);
  so.set_checksum(o.checksum);
  return so;
}

}  // namespace

void DiskHost::FenceFills() {
  std::unique_lock fence(fill_mu_);
  fill_generation_.fetch_add(1, std::memory_order_acq_rel);
}

void DiskHost::CountHits(std::span<const disk::DiskTier::ReadOp> ops) {
  if (options_.promote_after_hits == 0) return;
  bool queued = false;
  {
    std::lock_guard lock(mu_);
    if (hits_.size() > kMaxTrackedHits) hits_.clear();  // bounded memory; counts start over
    for (const disk::DiskTier::ReadOp& r : ops) {
      uint32_t& n = hits_[r.offset];
      if (++n < options_.promote_after_hits) continue;
      hits_.erase(r.offset);
      std::optional<disk::DiskObject> o = tier_->Find(r.offset, r.length);
      if (!o) continue;
      if (promote_queue_.size() >= kMaxQueuedPromotions) {
        promote_failed_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      promote_queue_.push_back(std::move(*o));
      queued = true;
    }
  }
  if (queued) cv_.notify_one();
}

void DiskHost::PromoteBatch(std::vector<disk::DiskObject> objects) {
  std::shared_ptr<transfer::SegmentMemory> mem = dram_->Find(dram_name_);
  master::MasterClient* master;
  {
    std::lock_guard lock(mu_);
    master = master_;
  }
  if (mem == nullptr || master == nullptr) return;
  rpc::Promote start;
  start.set_segment_name(dram_name_);
  for (const disk::DiskObject& o : objects) *start.add_start() = StoredAt(o, 0);
  const Clock::time_point asked = Clock::now();
  const uint64_t generation = fill_generation_.load(std::memory_order_acquire);
  auto reserved = master->Promote(start, DeadlineAfter(options_.rpc_timeout));
  if (!reserved.ok()) {
    promote_failed_.fetch_add(objects.size(), std::memory_order_relaxed);
    return;
  }
  // Granted ranges, read from disk (checksums checked) into one aligned buffer.
  std::vector<std::pair<disk::DiskObject, uint64_t>> granted;
  uint64_t total = 0;
  for (size_t i = 0; i < objects.size(); ++i) {
    const auto code = static_cast<ErrorCode>(reserved->start_codes(static_cast<int>(i)));
    const uint64_t at = reserved->start_offsets(static_cast<int>(i));
    if (code != ErrorCode::OK) {
      // ALREADY_EXISTS: promoted already (or never evicted); the rest leave it on disk.
      if (code != ErrorCode::OBJECT_ALREADY_EXISTS) {
        promote_failed_.fetch_add(1, std::memory_order_relaxed);
      }
      continue;
    }
    granted.emplace_back(std::move(objects[i]), at);
    total += tier_->Reserved(granted.back().first.size);
  }
  if (granted.empty()) return;
  std::shared_ptr<disk::AlignedBuffer> buf = read_buffers_->Acquire(total);
  std::vector<disk::DiskTier::ReadOp> ops;
  uint64_t pos = 0;
  for (const auto& [o, at] : granted) {
    ops.push_back(disk::DiskTier::ReadOp{o.offset, o.size, buf->data() + pos});
    pos += tier_->Reserved(o.size);
  }
  // Each object's read is its own: one that fails its checksum stays on disk alone.
  const std::vector<Status> read = tier_->ReadSeparately(ops, buf);
  std::vector<std::pair<disk::DiskObject, uint64_t>> filled;
  rpc::Promote cancel;
  cancel.set_segment_name(dram_name_);
  {
    // Held while filling: a re-mount (a restarted or failed-over master, which knows nothing
    // of these reservations and may place puts anywhere free) waits for it, and a fill after
    // that re-mount, or too late for the reservation, does not happen.
    std::shared_lock fill(fill_mu_);
    const bool valid = fill_generation_.load(std::memory_order_acquire) == generation &&
                       Clock::now() - asked < kFillWithin;
    for (size_t i = 0; i < granted.size(); ++i) {
      const auto& [o, at] = granted[i];
      if (!valid || !read[i].ok() || at > mem->size() || o.size > mem->size() - at) {
        *cancel.add_cancel() = StoredAt(o, at);
        continue;
      }
      std::memcpy(mem->base() + at, ops[i].dst, o.size);
      filled.push_back(granted[i]);
    }
  }
  for (const Status& st : read) {
    if (st.ok()) continue;
    const size_t failed = static_cast<size_t>(
        std::count_if(read.begin(), read.end(), [](const Status& s) { return !s.ok(); }));
    spdlog::warn("disk segment={}: promotion read failed: {} ({} of {} objects stay on disk only)",
                 name_, st.ToString(), failed, granted.size());
    break;
  }
  const size_t listed = filled.empty() ? 0 : CommitPromotions(*master, filled);
  promoted_.fetch_add(listed, std::memory_order_relaxed);
  promote_failed_.fetch_add(granted.size() - listed, std::memory_order_relaxed);
  if (cancel.cancel_size() > 0) {
    // Unanswered: the master frees the reservations after its timeout.
    (void)master->Promote(std::move(cancel), DeadlineAfter(options_.rpc_timeout));
  }
}

size_t DiskHost::CommitPromotions(
    master::MasterClient& master,
    const std::vector<std::pair<disk::DiskObject, uint64_t>>& filled) {
  {
    // Before the commit: its journal entry may reach the heartbeat before the reply reaches us.
    std::lock_guard lock(mu_);
    for (const auto& [o, at] : filled) promoting_dram_[at] = o.key;
  }
  size_t listed = 0;
  std::vector<std::pair<disk::DiskObject, uint64_t>> pending = filled;
  std::vector<std::pair<disk::DiskObject, uint64_t>> unlisted;
  for (int attempt = 0; !pending.empty(); ++attempt) {
    rpc::Promote commit;
    commit.set_segment_name(dram_name_);
    for (const auto& [o, at] : pending) *commit.add_commit() = StoredAt(o, at);
    auto r = master.Promote(commit, DeadlineAfter(options_.rpc_timeout));
    if (!r.ok()) {
      // Perhaps applied: a listed one's journal commit clears its mark; an unlisted one's
      // reservation lapses at the master.
      unlisted.insert(unlisted.end(), pending.begin(), pending.end());
      break;
    }
    std::vector<std::pair<disk::DiskObject, uint64_t>> again;
    for (size_t i = 0; i < pending.size(); ++i) {
      const auto code = static_cast<ErrorCode>(r->commit_codes(static_cast<int>(i)));
      if (code == ErrorCode::OK) {
        ++listed;
      } else if (code == ErrorCode::OBJECT_HAS_LEASE && attempt + 1 < kMaxCommitTries) {
        again.push_back(pending[i]);
      } else {
        unlisted.push_back(pending[i]);
      }
    }
    pending = std::move(again);
    if (!pending.empty()) {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, kCommitRetryDelay, [this] { return stop_; })) {
        unlisted.insert(unlisted.end(), pending.begin(), pending.end());
        break;
      }
    }
  }
  if (!unlisted.empty()) {
    std::lock_guard lock(mu_);
    for (const auto& [o, at] : unlisted) {
      auto it = promoting_dram_.find(at);
      if (it != promoting_dram_.end() && it->second == o.key) promoting_dram_.erase(it);
    }
  }
  return listed;
}

}  // namespace kvpool::hosting
