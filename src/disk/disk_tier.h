// A segment host's disk tier: objects below its DRAM, in one preallocated file.
//
// Layout: DIR/kvpool-disk.data (the bytes, preallocated to the tier's size, space handed out by
// alloc::OffsetAllocator in units of `alignment`) and DIR/kvpool-disk.index (index_log.h). I/O
// goes through io_uring (uring_queue.h) with a bounded queue depth, with O_DIRECT when the file
// system takes it (tmpfs does not: the tier then falls back to buffered I/O and says so in the
// log and in stats().direct_io).
//
// Crash consistency: Write() makes an object's bytes durable (fdatasync) before it appends the
// ADD record; a restarted tier lists exactly the objects whose ADD survived. Every read of a
// listed object is checked against its checksum: a torn or flipped byte is CHECKSUM_MISMATCH,
// never served.
//
// Eviction is the caller's: when Write() reports NO_AVAILABLE_HANDLE, the caller takes
// LruVictims(), unlists them where it must (the master), then Free()s them.
//
// Threading: thread-safe. The index (map, LRU list, allocator) is guarded by one mutex that is
// never held across I/O; reads and writes use separate rings (reads several, taken in turn), so
// reads do not queue behind an offload batch nor behind each other.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "alloc/offset_allocator.h"
#include "disk/index_log.h"
#include "disk/uring_queue.h"
#include "kvpool/status.h"

namespace kvpool::disk {

struct DiskTierOptions {
  std::string dir;            // must exist and be writable
  uint64_t size = 0;          // bytes of the data file (>= 1 MiB)
  uint32_t queue_depth = 32;  // io_uring ops in flight per ring
  uint64_t alignment = 4096;  // allocation unit and O_DIRECT alignment (power of two)
  bool direct_io = true;      // try O_DIRECT (falls back when the file system refuses it)
  // Longest one Read() or Write() batch waits for the disk (then its I/O is cancelled and the
  // batch fails: a hung disk must not hold a data server thread or shutdown).
  std::chrono::milliseconds io_timeout{5000};
  // Longest Open() waits for the data file's lock before it reports the path in use. A node
  // killed with io_uring I/O in flight keeps the lock after it is gone: its rings hold the file
  // until the kernel has finished or cancelled that I/O, so a restart right after kill -9 can
  // find it still locked. Waiting covers that, and keeps the restarted node from reading the
  // file while the dead one's writes still land; a second live owner is still refused.
  std::chrono::milliseconds lock_wait{10000};
};

struct DiskObject {
  std::string key;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t checksum = 0;
};

struct DiskTierStats {
  uint64_t capacity = 0;
  uint64_t used = 0;
  uint64_t objects = 0;
  uint64_t bytes_written = 0, bytes_read = 0;
  uint64_t writes = 0, reads = 0;      // objects
  uint64_t write_ns = 0, read_ns = 0;  // time in I/O batches, summed
  uint64_t checksum_failures = 0;
  uint64_t io_errors = 0;
  uint64_t no_space = 0;  // Write items refused for want of room
  bool direct_io = false;
};

// Memory aligned for O_DIRECT; owns it.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // May throw std::bad_alloc. `size` is rounded up to `alignment`.
  AlignedBuffer(uint64_t size, uint64_t alignment);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

class DiskTier {
 public:
  // Opens (creating and preallocating) the tier and replays its index.
  // Errors, each naming the path and the need: FILE_NOT_FOUND (the directory does not exist);
  // FILE_OPEN_FAIL (not a directory, not writable, or in use by another process);
  // NO_AVAILABLE_HANDLE (the file system lacks the space asked for); INVALID_PARAMS (size below
  // 1 MiB, alignment not a power of two of at least 512, queue depth out of range).
  static Result<std::unique_ptr<DiskTier>> Open(const DiskTierOptions& options);
  ~DiskTier();
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  uint64_t alignment() const { return alignment_; }
  uint64_t Reserved(uint64_t size) const { return (size + alignment_ - 1) & ~(alignment_ - 1); }
  const std::string& dir() const { return dir_; }
  // Bytes of the data file objects may take (fixed at Open: read without the lock).
  uint64_t capacity() const { return allocator_.capacity(); }

  // The listed objects, ascending by offset (after Open: those the index kept).
  std::vector<DiskObject> Objects() const;

  struct WriteItem {
    std::string_view key;
    // REQUIRES: aligned to alignment() and readable for Reserved(size) bytes.
    const uint8_t* data = nullptr;
    uint64_t size = 0;
    uint64_t checksum = 0;  // of the `size` bytes; must not be 0
  };
  // Writes the items, makes them durable and lists them. One result per item: the listed
  // object, NO_AVAILABLE_HANDLE (no room: evict and retry), FILE_WRITE_FAIL (I/O error or
  // io_timeout passed; nothing listed), INVALID_PARAMS (size 0, checksum 0, empty key, key
  // listed already). `pin` owns the items' bytes (see UringQueue::Run: kept should the disk
  // hang for good; empty: the caller keeps them valid for the tier's lifetime).
  std::vector<Result<DiskObject>> Write(std::span<const WriteItem> items,
                                        std::shared_ptr<const void> pin = {});

  // Up to `n` listed objects, least recently used (written or read) first. Lists nothing new.
  std::vector<DiskObject> LruVictims(size_t n) const;
  // Unlists the object at `offset` (a DEL record) and frees its space; false if none is listed
  // there. An I/O error appending the record is counted and logged; the space is freed anyway
  // (a replayed ADD without its DEL is harmless: the caller's master no longer lists it, and a
  // later restart's re-registration lets the master decide).
  bool Free(uint64_t offset);
  // Frees several (one log append).
  size_t Free(std::span<const uint64_t> offsets);

  // Reads come from several threads at once, each request a few ranges: one ring each (picked
  // in turn) keeps their I/O in flight together instead of one request's at a time.
  static constexpr size_t kReadRings = 4;

  struct ReadOp {
    uint64_t offset = 0;  // must be a listed object's offset ...
    uint64_t length = 0;  // ... and its size
    // REQUIRES: aligned to alignment() and writable for Reserved(length) bytes.
    uint8_t* dst = nullptr;
  };
  // Reads listed objects and checks each against its checksum (touching the LRU).
  // Each op succeeds or fails on its own: one op's failure never fails the others' bytes.
  // Returns OK when every op read intact, else the first failure (naming key and offset):
  // INVALID_READ (no object listed at offset with that size); CHECKSUM_MISMATCH; FILE_READ_FAIL
  // (I/O error, or io_timeout passed). Use ReadSeparately to learn which ops failed. `pin` owns
  // the dst buffers, as for Write.
  Status Read(std::span<const ReadOp> ops, std::shared_ptr<const void> pin = {});
  // As Read, one status per op: OK (its bytes are in `dst` and match their checksum),
  // INVALID_READ, CHECKSUM_MISMATCH, or FILE_READ_FAIL (the batch's I/O error or deadline, for
  // every op not ended before it).
  std::vector<Status> ReadSeparately(std::span<const ReadOp> ops,
                                     std::shared_ptr<const void> pin = {});
  // As ReadSeparately, reporting each op as soon as it ends, while later ones are still on the
  // disk: `on_op(i, status)` is called once per op, on the calling thread (an op not listed is
  // reported INVALID_READ before any I/O). Returns the first error.
  Status ReadEach(std::span<const ReadOp> ops, std::shared_ptr<const void> pin,
                  const std::function<void(size_t, const Status&)>& on_op);
  // The listed object at `offset` with `length` bytes, if any.
  std::optional<DiskObject> Find(uint64_t offset, uint64_t length) const;

  DiskTierStats stats() const;

 private:
  struct Entry {
    DiskObject obj;
    alloc::Allocation alloc;
    std::list<uint64_t>::iterator lru;  // position in lru_ (front: least recent)
  };
  DiskTier(const DiskTierOptions& options, int fd, bool direct);
  // Lists `objects` (ascending, non-overlapping) in the fresh allocator.
  void Adopt(std::vector<LogRecord> live);
  // Logs an I/O error once per kind, then counts it.
  void NoteIoError(const Status& st);

  const std::string dir_;
  const uint64_t alignment_;
  const int fd_;
  const bool direct_;
  const std::chrono::milliseconds io_timeout_;
  std::vector<std::unique_ptr<UringQueue>> reads_;
  std::atomic<size_t> next_read_ring_{0};
  std::unique_ptr<UringQueue> writes_;
  std::unique_ptr<IndexLog> log_;

  mutable std::mutex mu_;
  alloc::OffsetAllocator allocator_;                  // guarded by mu_
  std::unordered_map<uint64_t, Entry> by_offset_;     // guarded by mu_
  std::unordered_map<std::string, uint64_t> by_key_;  // guarded by mu_
  mutable std::list<uint64_t> lru_;                   // guarded by mu_

  std::atomic<uint64_t> bytes_written_{0}, bytes_read_{0}, objects_written_{0}, objects_read_{0};
  std::atomic<uint64_t> write_ns_{0}, read_ns_{0}, checksum_failures_{0}, io_errors_{0};
  std::atomic<uint64_t> no_space_{0};
  std::atomic<bool> io_error_logged_{false};
};

}  // namespace kvpool::disk
