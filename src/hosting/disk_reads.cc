// DiskHost's READ path (disk_host.h, "Reads"): checking a request, reading it whole or
// streamed, and what a read's outcome feeds (hit counts for promotion, suspects to re-check).
#include <fmt/format.h>

#include "hosting/disk_host.h"
#include "hosting/streamed_read.h"

namespace kvpool::hosting {

Result<DiskHost::PreparedRead> DiskHost::PrepareRead(const rpc::DataRequest& req) {
  if (req.segment_incarnation() != 0 && req.segment_incarnation() != incarnation_) {
    return Status(ErrorCode::SEGMENT_NOT_FOUND,
                  fmt::format("segment={} incarnation={:016x} is not served here (this disk "
                              "tier's is {:016x}): its host restarted",
                              name_, req.segment_incarnation(), incarnation_));
  }
  // The ranges come from the wire: each must name a listed object (which bounds its length),
  // and all of them together at most the tier's size, before they size the buffer.
  uint64_t total = 0;
  const uint64_t capacity = tier_->capacity();
  for (const rpc::Range& r : req.ranges()) {
    if (!tier_->Find(r.offset(), r.length())) {
      return Status(ErrorCode::INVALID_READ,
                    fmt::format("segment={}: no object of {} bytes at offset {}", name_, r.length(),
                                r.offset()));
    }
    total += tier_->Reserved(r.length());
    if (total > capacity) {
      return Status(ErrorCode::INVALID_READ,
                    fmt::format("segment={}: a READ of {} ranges asks for more than the tier's {} "
                                "bytes",
                                name_, req.ranges_size(), capacity));
    }
  }
  PreparedRead p;
  p.buffer = read_buffers_->Acquire(total);  // reused, not faulted in afresh
  p.ops.reserve(req.ranges_size());
  uint64_t pos = 0;
  for (const rpc::Range& r : req.ranges()) {
    p.ops.push_back(disk::DiskTier::ReadOp{r.offset(), r.length(), p.buffer->data() + pos});
    pos += tier_->Reserved(r.length());
  }
  return p;
}

void DiskHost::NoteReadResult(std::span<const disk::DiskTier::ReadOp> ops, const Status& st) {
  if (st.ok()) {
    CountHits(ops);
    return;
  }
  read_failures_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);
    for (const auto& op : ops) {
      if (suspects_.size() >= kMaxSuspects) break;
      if (auto o = tier_->Find(op.offset, op.length)) suspects_.push_back(std::move(*o));
    }
  }
  cv_.notify_one();
}

std::optional<rpc::Reply> DiskHost::Read(const rpc::DataRequest& req) {
  if (!bound_.load(std::memory_order_acquire) || req.segment_name() != name_) return std::nullopt;
  read_requests_.fetch_add(1, std::memory_order_relaxed);
  auto prepared = PrepareRead(req);
  if (!prepared.ok()) {
    read_failures_.fetch_add(1, std::memory_order_relaxed);
    return rpc::Reply::Error(prepared.status());
  }
  PreparedRead p = std::move(prepared).value();
  rpc::Reply reply = rpc::Reply::Of(rpc::Empty());
  if (req.status_trailer()) {
    // Past the tier's own deadline and its cancel grace, a range still out is reported failed.
    auto read = std::make_shared<StreamedRead>(
        p.buffer, std::move(p.ops),
        DeadlineAfter(options_.tier.io_timeout + std::chrono::seconds(3)));
    bool queued = false;
    {
      std::lock_guard lock(readers_mu_);
      if (!readers_stop_) {
        read_jobs_.push_back(read);
        queued = true;
      }
    }
    if (!queued)
      return rpc::Reply::Error(Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                                      fmt::format("segment={} is stopping", name_)));
    readers_cv_.notify_one();
    reply.source = std::move(read);
    reply.keep_alive = std::move(p.buffer);
    return reply;
  }
  Status st = tier_->Read(p.ops, p.buffer);
  NoteReadResult(p.ops, st);
  if (!st.ok()) return rpc::Reply::Error(st);
  reply.payload.reserve(p.ops.size());
  for (const auto& op : p.ops) reply.payload.emplace_back(op.dst, op.length);
  reply.keep_alive = std::move(p.buffer);
  return reply;
}

void DiskHost::StartReaders() {
  for (size_t i = 0; i < disk::DiskTier::kReadRings; ++i) {
    readers_.emplace_back([this] { ReaderLoop(); });
  }
}

void DiskHost::StopReaders() {
  {
    std::lock_guard lock(readers_mu_);
    readers_stop_ = true;
  }
  readers_cv_.notify_all();
  for (auto& t : readers_) {
    if (t.joinable()) t.join();
  }
  readers_.clear();
}

void DiskHost::ReaderLoop() {
  while (true) {
    std::shared_ptr<StreamedRead> read;
    {
      std::unique_lock lock(readers_mu_);
      readers_cv_.wait(lock, [&] { return readers_stop_ || !read_jobs_.empty(); });
      if (read_jobs_.empty()) return;  // stopping, nothing left
      read = std::move(read_jobs_.front());
      read_jobs_.pop_front();
      if (readers_stop_) {
        lock.unlock();
        read->FailRest(Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                              fmt::format("segment={} is stopping", name_)));
        continue;
      }
    }
    Status st = tier_->ReadEach(read->ops(), read->buffer(),
                                [&](size_t i, const Status& s) { read->Done(i, s); });
    read->FailRest(st.ok() ? Status(ErrorCode::INTERNAL_ERROR, "range not read") : st);
    NoteReadResult(read->ops(), st);
  }
}

}  // namespace kvpool::hosting
