// DiskHost's READ path (disk_host.h, "Reads"): checking a request, reading it whole or
// streamed, and what a read's outcome feeds (hit counts for promotion, suspects to re-check).
#include <fmt/format.h>

#include "hosting/disk_host.h"
#include "hosting/streamed_read.h"

namespace kvpool::hosting {

Status DiskHost::CheckIncarnation(const rpc::DataRequest& req) const {
  if (req.segment_incarnation() != 0 && req.segment_incarnation() != incarnation_) {
    return Status(ErrorCode::SEGMENT_NOT_FOUND,
                  fmt::format("segment={} incarnation={:016x} is not served here (this disk "
                              "tier's is {:016x}): its host restarted",
                              name_, req.segment_incarnation(), incarnation_));
  }
  return Status::Ok();
}

Result<uint64_t> DiskHost::CheckReadRanges(const rpc::DataRequest& req) const {
  KVPOOL_RETURN_IF_ERROR(CheckIncarnation(req));
  // The ranges come from the wire: each must name a listed object (which bounds its length),
  // and all of them together at most the tier's size, before they size a buffer.
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
  return total;
}

Result<DiskHost::PreparedRead> DiskHost::PrepareRead(const rpc::DataRequest& req) {
  auto total = CheckReadRanges(req);
  if (!total.ok()) return total.status();
  PreparedRead p;
  p.buffer = read_buffers_->Acquire(*total);  // reused, not faulted in afresh
  p.ops.reserve(req.ranges_size());
  uint64_t pos = 0;
  for (const rpc::Range& r : req.ranges()) {
    p.ops.push_back(disk::DiskTier::ReadOp{r.offset(), r.length(), p.buffer->data() + pos});
    pos += tier_->Reserved(r.length());
  }
  return p;
}

namespace {

// Ops reading `ranges` straight into `dst` when each range is a whole number of `align` bytes
// and lands at an `align`-aligned address inside one iovec; nullopt otherwise.
std::optional<std::vector<disk::DiskTier::ReadOp>> DirectOps(
    const google::protobuf::RepeatedPtrField<rpc::Range>& ranges, std::span<const iovec> dst,
    uint64_t align) {
  std::vector<disk::DiskTier::ReadOp> ops;
  ops.reserve(ranges.size());
  size_t vi = 0;
  uint64_t used = 0;  // of dst[vi]
  for (const rpc::Range& r : ranges) {
    while (vi < dst.size() && used == dst[vi].iov_len) ++vi, used = 0;
    if (vi == dst.size() || r.length() % align != 0 || dst[vi].iov_len - used < r.length()) {
      return std::nullopt;
    }
    uint8_t* at = static_cast<uint8_t*>(dst[vi].iov_base) + used;
    if (reinterpret_cast<uintptr_t>(at) % align != 0) return std::nullopt;
    ops.push_back(disk::DiskTier::ReadOp{r.offset(), r.length(), at});
    used += r.length();
  }
  return ops;
}

}  // namespace

std::optional<Status> DiskHost::ReadInto(const rpc::DataRequest& req, std::span<const iovec> dst,
                                         std::vector<Status>* range_status) {
  if (!bound_.load(std::memory_order_acquire) || req.segment_name() != name_) return std::nullopt;
  auto ops = DirectOps(req.ranges(), dst, tier_->alignment());
  if (!ops) return std::nullopt;
  read_requests_.fetch_add(1, std::memory_order_relaxed);
  direct_reads_.fetch_add(1, std::memory_order_relaxed);
  // No buffer is sized from the ranges here, and the tier's read checks each against a listed
  // object of that size (INVALID_READ): only the incarnation is left to check.
  if (Status st = CheckIncarnation(req); !st.ok()) {
    read_failures_.fetch_add(1, std::memory_order_relaxed);
    return st;
  }
  std::vector<Status> each = tier_->ReadSeparately(*ops, nullptr);
  NoteReadResult(*ops, each);
  Status first;
  for (const Status& st : each) {
    if (!st.ok()) {
      first = st;
      break;
    }
  }
  if (!first.ok() && range_status != nullptr) *range_status = std::move(each);
  return first;
}

void DiskHost::NoteReadResult(std::span<const disk::DiskTier::ReadOp> ops,
                              std::span<const Status> each) {
  // Hits for the ranges that read good; the failed ones are read again on their own.
  std::vector<disk::DiskTier::ReadOp> good;
  good.reserve(ops.size());
  bool failed = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i < each.size() && each[i].ok()) {
      good.push_back(ops[i]);
    } else {
      failed = true;
    }
  }
  CountHits(good);
  if (!failed) return;
  read_failures_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i < each.size() && each[i].ok()) continue;
      if (suspects_.size() >= kMaxSuspects) break;
      if (auto o = tier_->Find(ops[i].offset, ops[i].length)) suspects_.push_back(std::move(*o));
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
        DeadlineAfter(options_.tier.io_timeout + std::chrono::seconds(3)), req.range_status());
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
  // No trailer to carry each range's outcome (an older client): one failed range fails the
  // reply.
  std::vector<Status> each = tier_->ReadSeparately(p.ops, p.buffer);
  NoteReadResult(p.ops, each);
  for (const Status& st : each) {
    if (!st.ok()) return rpc::Reply::Error(st);
  }
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
    std::vector<Status> each(read->ops().size(),
                             Status(ErrorCode::INTERNAL_ERROR, "range not read"));
    Status st = tier_->ReadEach(read->ops(), read->buffer(), [&](size_t i, const Status& s) {
      each[i] = s;
      read->Done(i, s);
    });
    read->FailRest(st.ok() ? Status(ErrorCode::INTERNAL_ERROR, "range not read") : st);
    NoteReadResult(read->ops(), each);
  }
}

}  // namespace kvpool::hosting
