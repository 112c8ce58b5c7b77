// The disk tier's crash-consistent index: an append-only log of fixed-layout records, each
// closed by an XXH3-64 of its bytes.
//
// An ADD record is appended (and made durable with fdatasync) only after the object's bytes are
// durable in the data file, so a listed object always has its bytes on disk; a DEL record
// unlists one. Replay stops at the first record that is torn (the tail of a write cut by a
// crash) or fails its checksum (a flipped bit): what follows is dropped, never trusted. Open()
// then rewrites the log compactly (a header and the live ADDs, through a temporary file and
// rename), so the log's size stays proportional to what is listed.
//
// Threading: Append is thread-safe (one mutex). Errors: FILE_OPEN_FAIL / FILE_READ_FAIL /
// FILE_WRITE_FAIL naming the path and errno.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvpool/status.h"

namespace kvpool::disk {

struct LogRecord {
  enum Type : uint8_t { kHeader = 1, kAdd = 2, kDel = 3 };
  Type type = kAdd;
  std::string key;        // kAdd
  uint64_t offset = 0;    // kAdd, kDel; kHeader: the data file's capacity
  uint64_t size = 0;      // kAdd; kHeader: the allocation alignment
  uint64_t checksum = 0;  // kAdd: XXH3-64 of the object's bytes (never 0)
};

// One record's bytes.
std::string EncodeRecord(const LogRecord& r);
// Records of `data` up to its end or the first bad one; `*valid_bytes` is the good prefix.
std::vector<LogRecord> DecodeRecords(std::string_view data, size_t* valid_bytes);

class IndexLog {
 public:
  struct Replayed {
    std::vector<LogRecord> live;  // ADDs not deleted since, ascending by offset
    uint64_t dropped_bytes = 0;   // log bytes after the first bad record
    // The last run's layout, when it differs from this one's (0: unchanged or no log).
    uint64_t old_capacity = 0;
    uint64_t old_alignment = 0;
    // Live objects dropped for the new layout: every one when the alignment changed, those
    // that no longer fit when only the capacity did (the rest are kept, in `live`).
    uint64_t dropped_objects = 0;
  };
  // Replays the log at `path` (missing: empty), keeps the live ADDs that fit the layout
  // (`capacity`, `alignment`): a changed capacity keeps every object that lies wholly inside
  // the new one, a changed alignment drops all. Then rewrites it compactly.
  static Result<std::unique_ptr<IndexLog>> Open(const std::string& path, uint64_t capacity,
                                                uint64_t alignment, Replayed* out);
  ~IndexLog();
  IndexLog(const IndexLog&) = delete;
  IndexLog& operator=(const IndexLog&) = delete;

  // Appends the records and makes them durable (one write, one fdatasync).
  Status Append(std::span<const LogRecord> records);
  const std::string& path() const { return path_; }

 private:
  IndexLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  const std::string path_;
  std::mutex mu_;
  int fd_;  // O_APPEND; writes guarded by mu_
};

}  // namespace kvpool::disk
