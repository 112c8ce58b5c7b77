// The offload pipeline of DiskHost (disk_host.h, "Offload"): the stager copies a batch of DRAM
// commits into an aligned buffer and checks it while the offload thread writes the one before,
// so a batch costs the disk's time, not the disk's plus the copy's.
#include <cstring>

#include "common/checksum.h"
#include "hosting/disk_host.h"

namespace kvpool::hosting {

void DiskHost::StageLoop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    stage_cv_.wait(lock, [this] { return stop_ || (!queue_.empty() && !staged_.has_value()); });
    if (stop_) break;
    std::vector<Pending> batch = TakeBatch(queue_, options_.batch_bytes);
    lock.unlock();
    StagedBatch staged = Stage(std::move(batch));
    lock.lock();
    if (staged.items.empty()) continue;
    staged_ = std::move(staged);
    cv_.notify_all();
  }
}

DiskHost::StagedBatch DiskHost::Stage(std::vector<Pending> batch) {
  StagedBatch out;
  std::shared_ptr<transfer::SegmentMemory> mem = dram_->Find(dram_name_);
  if (mem == nullptr) {  // the DRAM segment is gone: nothing to copy, counted as skipped
    skipped_.fetch_add(batch.size(), std::memory_order_relaxed);
    return out;
  }
  uint64_t total = 0;
  for (const Pending& p : batch) total += tier_->Reserved(p.size);
  out.buffer = read_buffers_->Acquire(total);
  out.items.reserve(batch.size());
  uint64_t pos = 0;
  for (const Pending& p : batch) {
    if (p.checksum == 0 || p.offset > mem->size() || p.size > mem->size() - p.offset) {
      skipped_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    uint8_t* at = out.buffer->data() + pos;
    std::memcpy(at, mem->base() + p.offset, p.size);
    // The copy, not the DRAM range, is checked: what is written is what was verified.
    if (ChecksumOf(at, p.size) != p.checksum) {
      skipped_.fetch_add(1, std::memory_order_relaxed);  // freed and rewritten meanwhile
      continue;
    }
    out.items.push_back(disk::DiskTier::WriteItem{p.key, at, p.size, p.checksum});
    pos += tier_->Reserved(p.size);
  }
  out.batch = std::move(batch);  // the items' keys (a vector's move keeps its elements)
  return out;
}

// By value: a sink. The batch and its staging buffer are freed when the write is done, not held
// by the caller through the rest of its loop.
void DiskHost::WriteStaged(StagedBatch staged) {  // NOLINT(performance-unnecessary-value-param)
  const std::vector<disk::DiskTier::WriteItem>& items = staged.items;
  auto results = tier_->Write(items, staged.buffer);
  std::vector<disk::DiskObject> written;
  std::vector<disk::DiskTier::WriteItem> no_room;
  uint64_t need = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok()) {
      written.push_back(std::move(results[i]).value());
    } else if (results[i].code() == ErrorCode::NO_AVAILABLE_HANDLE) {
      no_room.push_back(items[i]);
      need += tier_->Reserved(items[i].size);
    } else {
      failed_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (!no_room.empty()) {
    MakeRoom(need);
    for (auto& r : tier_->Write(no_room, staged.buffer)) {
      if (r.ok()) {
        written.push_back(std::move(r).value());
      } else {
        failed_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  ReportAdds(std::move(written), 0);
}

}  // namespace kvpool::hosting
