#include "disk/disk_tier.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "common/checksum.h"

namespace kvpool::disk {
namespace {

constexpr uint64_t kMinSize = uint64_t{1} << 20;

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

Status ValidateOptions(const DiskTierOptions& o) {
  if (o.dir.empty()) return Status(ErrorCode::INVALID_PARAMS, "disk tier: no directory given");
  if (o.size < kMinSize) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("disk tier at {}: size {} is below the minimum of 1 MiB", o.dir, o.size));
  }
  if (o.alignment < 512 || (o.alignment & (o.alignment - 1)) != 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("disk tier alignment {} is not a power of two >= 512", o.alignment));
  }
  if (o.io_timeout.count() <= 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("disk tier io_timeout {} ms is not positive", o.io_timeout.count()));
  }
  if (o.queue_depth == 0 || o.queue_depth > 4096) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("disk tier queue depth {} is not in [1, 4096]", o.queue_depth));
  }
  return Status::Ok();
}

// Takes the exclusive lock on `fd`, retrying until `wait` has passed (see
// DiskTierOptions::lock_wait for why a lock can outlive its owner by a moment).
bool LockWithin(int fd, const std::string& path, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  bool told = false;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return false;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (!told) {
      spdlog::warn(
          "{} is locked by another process; waiting up to {} ms for it (a node killed "
          "mid-I/O holds it until the kernel has finished that I/O)",
          path, wait.count());
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (told) spdlog::info("{} is ours now", path);
  return true;
}

Status CheckDir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return Status(ErrorCode::FILE_NOT_FOUND,
                    fmt::format("disk path {} does not exist: create it (mkdir -p) or pass "
                                "another --disk_path",
                                dir));
    }
    return Status(ErrorCode::FILE_OPEN_FAIL, fmt::format("disk path {}: {}", dir, strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status(ErrorCode::FILE_OPEN_FAIL,
                  fmt::format("disk path {} is not a directory: pass a directory", dir));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status(ErrorCode::FILE_OPEN_FAIL,
                  fmt::format("disk path {} is not writable by this process (uid {}): {}", dir,
                              ::getuid(), strerror(errno)));
  }
  return Status::Ok();
}

// Opens the data file, with O_DIRECT when the file system takes it.
Result<int> OpenData(const std::string& path, bool want_direct, bool* direct) {
  int flags = O_RDWR | O_CREAT | O_CLOEXEC;
  if (want_direct) {
    int fd = ::open(path.c_str(), flags | O_DIRECT, 0644);
    if (fd >= 0) {
      *direct = true;
      return fd;
    }
    if (errno != EINVAL) {
      return Status(ErrorCode::FILE_OPEN_FAIL, fmt::format("open {}: {}", path, strerror(errno)));
    }
    spdlog::warn(
        "disk tier {}: the file system does not take O_DIRECT (tmpfs?); using buffered "
        "I/O (page cache) instead",
        path);
  }
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    return Status(ErrorCode::FILE_OPEN_FAIL, fmt::format("open {}: {}", path, strerror(errno)));
  }
  *direct = false;
  return fd;
}

// Grows (preallocating) or shrinks the data file to `size`.
Status Preallocate(int fd, const std::string& dir, const std::string& path, uint64_t size) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Status(ErrorCode::FILE_OPEN_FAIL, fmt::format("stat {}: {}", path, strerror(errno)));
  }
  uint64_t have = static_cast<uint64_t>(st.st_blocks) * 512;
  if (have < size) {
    struct statvfs vfs {};
    if (::statvfs(dir.c_str(), &vfs) == 0) {
      uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
      if (avail < size - have) {
        return Status(ErrorCode::NO_AVAILABLE_HANDLE,
                      fmt::format("disk path {} has {} bytes free but the disk tier needs {} more "
                                  "(--disk_size {}): free space or pass a smaller --disk_size",
                                  dir, avail, size - have, size));
      }
    }
  }
  if (static_cast<uint64_t>(st.st_size) > size && ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    return Status(ErrorCode::FILE_WRITE_FAIL,
                  fmt::format("truncate {} to {}: {}", path, size, strerror(errno)));
  }
  int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (rc == ENOSPC) {
    return Status(ErrorCode::NO_AVAILABLE_HANDLE,
                  fmt::format("disk path {} lacks the space for the disk tier (--disk_size {}): "
                              "free space or pass a smaller --disk_size",
                              dir, size));
  }
  if (rc != 0) {
    return Status(ErrorCode::FILE_WRITE_FAIL,
                  fmt::format("preallocate {} bytes of {}: {}", size, path, strerror(rc)));
  }
  return Status::Ok();
}

}  // namespace

AlignedBuffer::AlignedBuffer(uint64_t size, uint64_t alignment) {
  // Buffers of a huge page or more are huge-page aligned and backed by transparent huge pages
  // where the kernel has them: a batch's copy and its O_DIRECT I/O then touch and pin one page
  // per 2 MiB instead of 512.
  constexpr uint64_t kHugePage = 2 << 20;
  const bool huge = size >= kHugePage;
  if (huge) alignment = std::max(alignment, kHugePage);
  size_ = (size + alignment - 1) & ~(alignment - 1);
  if (size_ == 0) return;
  data_ = static_cast<uint8_t*>(std::aligned_alloc(alignment, size_));
  if (data_ == nullptr) throw std::bad_alloc();
  if (huge) ::madvise(data_, size_, MADV_HUGEPAGE);  // best effort
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

Result<std::unique_ptr<DiskTier>> DiskTier::Open(const DiskTierOptions& options) {
  KVPOOL_RETURN_IF_ERROR(ValidateOptions(options));
  KVPOOL_RETURN_IF_ERROR(CheckDir(options.dir));
  std::string data_path = options.dir + "/kvpool-disk.data";
  // A file this call creates is removed again should the tier not open (no empty file left).
  struct stat before {};
  const bool existed = ::stat(data_path.c_str(), &before) == 0;
  bool direct = false;
  auto fd = OpenData(data_path, options.direct_io, &direct);
  if (!fd.ok()) return fd.status();
  if (!LockWithin(*fd, data_path, options.lock_wait)) {
    ::close(*fd);
    return Status(ErrorCode::FILE_OPEN_FAIL,
                  fmt::format("disk path {} is in use by another process (its {} stayed locked "
                              "for {} ms): give each node its own --disk_path",
                              options.dir, data_path, options.lock_wait.count()));
  }
  Status st = Preallocate(*fd, options.dir, data_path, options.size);
  if (!st.ok()) {
    if (!existed) ::unlink(data_path.c_str());  // still locked: nobody else opened it
    ::close(*fd);
    return st;
  }
  std::unique_ptr<DiskTier> tier(new DiskTier(options, *fd, direct));
  for (size_t i = 0; i < kReadRings; ++i) {
    auto reads = UringQueue::Create(options.queue_depth);
    if (!reads.ok()) return reads.status();
    tier->reads_.push_back(std::move(reads).value());
  }
  auto writes = UringQueue::Create(options.queue_depth);
  if (!writes.ok()) return writes.status();
  tier->writes_ = std::move(writes).value();
  IndexLog::Replayed replayed;
  auto log = IndexLog::Open(options.dir + "/kvpool-disk.index", tier->allocator_.capacity(),
                            options.alignment, &replayed);
  if (!log.ok()) return log.status();
  tier->log_ = std::move(log).value();
  if (replayed.dropped_bytes > 0) {
    spdlog::warn(
        "disk tier {}: index log had {} bytes after its last intact record (a torn or "
        "corrupt tail); dropped them",
        options.dir, replayed.dropped_bytes);
  }
  if (replayed.old_alignment != 0) {
    spdlog::warn(
        "disk tier {}: alignment changed since the last run ({} -> {} bytes): its {} objects "
        "were dropped",
        options.dir, replayed.old_alignment, options.alignment, replayed.dropped_objects);
  } else if (replayed.old_capacity != 0) {
    spdlog::warn(
        "disk tier {}: size changed since the last run ({} -> {} bytes): kept the {} objects "
        "that fit, dropped {} that lay beyond the new size",
        options.dir, replayed.old_capacity, tier->allocator_.capacity(), replayed.live.size(),
        replayed.dropped_objects);
  }
  size_t listed = replayed.live.size();
  tier->Adopt(std::move(replayed.live));
  spdlog::info("disk tier {}: {} bytes, o_direct={}, queue_depth={}, objects_adopted={}",
               options.dir, tier->allocator_.capacity(), direct, options.queue_depth, listed);
  return tier;
}

DiskTier::DiskTier(const DiskTierOptions& options, int fd, bool direct)
    : dir_(options.dir),
      alignment_(options.alignment),
      fd_(fd),
      direct_(direct),
      io_timeout_(options.io_timeout),
      allocator_(options.size, options.alignment) {}

DiskTier::~DiskTier() { ::close(fd_); }

void DiskTier::Adopt(std::vector<LogRecord> live) {
  std::lock_guard lock(mu_);
  // A fresh allocator hands out its free range from the start: allocating the gaps (fillers,
  // freed at the end) and the objects in ascending order rebuilds exactly their allocations.
  std::vector<alloc::Allocation> fillers;
  uint64_t cursor = 0;
  for (LogRecord& r : live) {
    if (r.offset > cursor) {
      auto f = allocator_.Allocate(r.offset - cursor);
      if (!f || f->offset != cursor) break;
      fillers.push_back(*f);
    }
    auto a = allocator_.Allocate(r.size);
    if (!a || a->offset != r.offset) {
      if (a) allocator_.Free(*a);
      break;
    }
    cursor = r.offset + a->size;
    lru_.push_back(r.offset);
    by_key_[r.key] = r.offset;
    by_offset_[r.offset] = Entry{DiskObject{std::move(r.key), r.offset, r.size, r.checksum}, *a,
                                 std::prev(lru_.end())};
  }
  for (const alloc::Allocation& f : fillers) allocator_.Free(f);
}

std::vector<DiskObject> DiskTier::Objects() const {
  std::lock_guard lock(mu_);
  std::vector<DiskObject> out;
  out.reserve(by_offset_.size());
  for (const auto& [offset, e] : by_offset_) out.push_back(e.obj);
  std::sort(out.begin(), out.end(),
            [](const DiskObject& a, const DiskObject& b) { return a.offset < b.offset; });
  return out;
}

void DiskTier::NoteIoError(const Status& st) {
  io_errors_.fetch_add(1, std::memory_order_relaxed);
  if (!io_error_logged_.exchange(true)) {
    spdlog::error(
        "disk tier {}: {} (further disk I/O errors are counted in "
        "kvpool_node_disk_io_errors_total, not logged)",
        dir_, st.ToString());
  }
}

std::vector<Result<DiskObject>> DiskTier::Write(std::span<const WriteItem> items,
                                                std::shared_ptr<const void> pin) {
  std::vector<Result<DiskObject>> out;
  out.reserve(items.size());
  std::vector<IoOp> ops;
  std::vector<size_t> placed;  // item index per op
  std::vector<alloc::Allocation> allocs;
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < items.size(); ++i) {
      const WriteItem& it = items[i];
      if (it.size == 0 || it.checksum == 0 || it.key.empty() || it.key.size() > 65535) {
        out.emplace_back(
            ErrorCode::INVALID_PARAMS,
            fmt::format("disk write key={}: size, checksum and key must be set", it.key));
        continue;
      }
      if (by_key_.count(std::string(it.key)) != 0) {
        out.emplace_back(ErrorCode::INVALID_PARAMS,
                         fmt::format("disk write key={}: already on the disk tier", it.key));
        continue;
      }
      auto a = allocator_.Allocate(it.size);
      if (!a) {
        no_space_.fetch_add(1, std::memory_order_relaxed);
        out.emplace_back(
            ErrorCode::NO_AVAILABLE_HANDLE,
            fmt::format("disk tier {} full: no room for key={} size={}", dir_, it.key, it.size));
        continue;
      }
      by_key_[std::string(it.key)] = a->offset;  // claimed while the write is in flight
      out.emplace_back(DiskObject{std::string(it.key), a->offset, it.size, it.checksum});
      ops.push_back(IoOp{true, a->offset, const_cast<uint8_t*>(it.data), a->size});
      placed.push_back(i);
      allocs.push_back(*a);
    }
  }
  if (ops.empty()) return out;
  uint64_t start = NowNs();
  Status st =
      writes_->Run(fd_, ops, "disk tier data file", DeadlineAfter(io_timeout_), std::move(pin));
  if (st.ok() && ::fdatasync(fd_) != 0) {
    st = Status(ErrorCode::FILE_WRITE_FAIL,
                fmt::format("fdatasync {}/kvpool-disk.data: {}", dir_, strerror(errno)));
  }
  std::vector<LogRecord> records;
  if (st.ok()) {
    records.reserve(ops.size());
    for (size_t k = 0; k < ops.size(); ++k) {
      const DiskObject& o = *out[placed[k]];
      records.push_back(LogRecord{LogRecord::kAdd, o.key, o.offset, o.size, o.checksum});
    }
    st = log_->Append(records);
  }
  write_ns_.fetch_add(NowNs() - start, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  for (size_t k = 0; k < ops.size(); ++k) {
    Result<DiskObject>& r = out[placed[k]];
    if (!st.ok()) {
      by_key_.erase(r->key);
      allocator_.Free(allocs[k]);
      r = st;
      continue;
    }
    lru_.push_back(r->offset);
    by_offset_[r->offset] = Entry{*r, allocs[k], std::prev(lru_.end())};
    bytes_written_.fetch_add(r->size, std::memory_order_relaxed);
    objects_written_.fetch_add(1, std::memory_order_relaxed);
  }
  if (!st.ok()) NoteIoError(st);
  return out;
}

std::vector<DiskObject> DiskTier::LruVictims(size_t n) const {
  std::lock_guard lock(mu_);
  std::vector<DiskObject> out;
  for (auto it = lru_.begin(); it != lru_.end() && out.size() < n; ++it) {
    out.push_back(by_offset_.at(*it).obj);
  }
  return out;
}

bool DiskTier::Free(uint64_t offset) { return Free(std::span<const uint64_t>(&offset, 1)) == 1; }

size_t DiskTier::Free(std::span<const uint64_t> offsets) {
  // Unlist first (no new reads find them), log the DELs, and only then release the space: a
  // DEL logged after a new ADD at the same offset would unlist the new object at replay.
  std::vector<alloc::Allocation> allocs;
  std::vector<LogRecord> records;
  {
    std::lock_guard lock(mu_);
    for (uint64_t offset : offsets) {
      auto it = by_offset_.find(offset);
      if (it == by_offset_.end()) continue;
      allocs.push_back(it->second.alloc);
      records.push_back(LogRecord{LogRecord::kDel, "", offset, 0, 0});
      lru_.erase(it->second.lru);
      by_key_.erase(it->second.obj.key);
      by_offset_.erase(it);
    }
  }
  if (records.empty()) return 0;
  Status st = log_->Append(records);
  if (!st.ok()) NoteIoError(st);
  std::lock_guard lock(mu_);
  for (const alloc::Allocation& a : allocs) allocator_.Free(a);
  return allocs.size();
}

std::optional<DiskObject> DiskTier::Find(uint64_t offset, uint64_t length) const {
  std::lock_guard lock(mu_);
  auto it = by_offset_.find(offset);
  if (it == by_offset_.end() || it->second.obj.size != length) return std::nullopt;
  return it->second.obj;
}

Status DiskTier::Read(std::span<const ReadOp> ops, std::shared_ptr<const void> pin) {
  return ReadEach(ops, std::move(pin), {});
}

std::vector<Status> DiskTier::ReadSeparately(std::span<const ReadOp> ops,
                                             std::shared_ptr<const void> pin) {
  std::vector<Status> out(ops.size());
  (void)ReadEach(ops, std::move(pin), [&](size_t i, const Status& st) { out[i] = st; });
  return out;
}

Status DiskTier::ReadEach(std::span<const ReadOp> ops, std::shared_ptr<const void> pin,
                          const std::function<void(size_t, const Status&)>& on_op) {
  std::vector<bool> reported(ops.size(), false);
  Status first_error;
  auto report = [&](size_t i, const Status& st) {
    reported[i] = true;
    if (!st.ok() && first_error.ok()) first_error = st;
    if (on_op) on_op(i, st);
  };
  std::vector<IoOp> io;
  io.reserve(ops.size());
  std::vector<size_t> op_of;  // index in `ops` of each io
  op_of.reserve(ops.size());
  std::vector<std::pair<std::string, uint64_t>> expect;  // key, checksum per io
  expect.reserve(ops.size());
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < ops.size(); ++i) {
      const ReadOp& op = ops[i];
      auto it = by_offset_.find(op.offset);
      if (it == by_offset_.end() || it->second.obj.size != op.length) {
        // This op alone fails: the others are listed objects and are read.
        report(i, Status(ErrorCode::INVALID_READ,
                         fmt::format("disk tier {}: no object of {} bytes at offset {}", dir_,
                                     op.length, op.offset)));
        continue;
      }
      lru_.splice(lru_.end(), lru_, it->second.lru);
      expect.emplace_back(it->second.obj.key, it->second.obj.checksum);
      io.push_back(IoOp{false, op.offset, op.dst, Reserved(op.length)});
      op_of.push_back(i);
    }
  }
  if (io.empty()) return first_error;
  // Each op is checked as it lands, on this thread, while the rest are still on the disk; a
  // mismatch fails that op alone.
  uint64_t bytes = 0, good = 0;
  auto check = [&](size_t j) {
    const size_t i = op_of[j];
    Status st;
    if (ChecksumOf(ops[i].dst, ops[i].length) != expect[j].second) {
      checksum_failures_.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn(
          "disk tier {}: key={} offset={} size={} fails its checksum (a torn write or "
          "a flipped bit); not served",
          dir_, expect[j].first, ops[i].offset, ops[i].length);
      st = Status(ErrorCode::CHECKSUM_MISMATCH,
                  fmt::format("disk tier {}: key={} offset={} fails its checksum", dir_,
                              expect[j].first, ops[i].offset));
    } else {
      bytes += ops[i].length;
      ++good;
    }
    report(i, st);
  };
  uint64_t start = NowNs();
  UringQueue& ring = *reads_[next_read_ring_.fetch_add(1, std::memory_order_relaxed) % kReadRings];
  Status st =
      ring.Run(fd_, io, "disk tier data file", DeadlineAfter(io_timeout_), std::move(pin), check);
  read_ns_.fetch_add(NowNs() - start, std::memory_order_relaxed);
  bytes_read_.fetch_add(bytes, std::memory_order_relaxed);
  objects_read_.fetch_add(good, std::memory_order_relaxed);
  if (!st.ok()) {
    // The ops that ended before the error keep their own result; the rest share the error.
    NoteIoError(st);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!reported[i]) report(i, st);
    }
  }
  return first_error;
}

DiskTierStats DiskTier::stats() const {
  DiskTierStats s;
  {
    std::lock_guard lock(mu_);
    s.capacity = allocator_.capacity();
    s.used = allocator_.used_bytes();
    s.objects = by_offset_.size();
  }
  s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  s.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  s.writes = objects_written_.load(std::memory_order_relaxed);
  s.reads = objects_read_.load(std::memory_order_relaxed);
  s.write_ns = write_ns_.load(std::memory_order_relaxed);
  s.read_ns = read_ns_.load(std::memory_order_relaxed);
  s.checksum_failures = checksum_failures_.load(std::memory_order_relaxed);
  s.io_errors = io_errors_.load(std::memory_order_relaxed);
  s.no_space = no_space_.load(std::memory_order_relaxed);
  s.direct_io = direct_;
  return s;
}

}  // namespace kvpool::disk
