#include "disk/index_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "common/checksum.h"

namespace kvpool::disk {
namespace {

constexpr uint32_t kMagic = 0x4944564b;  // "KVDI"
constexpr size_t kFixed = 32;            // magic, type, pad, key length, offset, size, checksum
constexpr size_t kTrailer = 8;           // XXH3-64 of the fixed part and the key

void Put64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), 8); }
uint64_t Get64(const char* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status(ErrorCode::FILE_WRITE_FAIL,
                    fmt::format("write {}: {}", path, n < 0 ? strerror(errno) : "no progress"));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Result<std::string> ReadWhole(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    return Status(ErrorCode::FILE_OPEN_FAIL, fmt::format("open {}: {}", path, strerror(errno)));
  }
  std::string data;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return Status(ErrorCode::FILE_READ_FAIL, fmt::format("read {}: {}", path, strerror(e)));
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

}  // namespace

std::string EncodeRecord(const LogRecord& r) {
  std::string s;
  s.reserve(kFixed + r.key.size() + kTrailer);
  s.append(reinterpret_cast<const char*>(&kMagic), 4);
  s.push_back(static_cast<char>(r.type));
  s.push_back(0);
  uint16_t klen = static_cast<uint16_t>(r.key.size());
  s.append(reinterpret_cast<const char*>(&klen), 2);
  Put64(&s, r.offset);
  Put64(&s, r.size);
  Put64(&s, r.checksum);
  s.append(r.key);
  Put64(&s, ChecksumOf(s.data(), s.size()));
  return s;
}

std::vector<LogRecord> DecodeRecords(std::string_view data, size_t* valid_bytes) {
  std::vector<LogRecord> out;
  size_t pos = 0;
  while (data.size() - pos >= kFixed + kTrailer) {
    const char* p = data.data() + pos;
    uint32_t magic;
    memcpy(&magic, p, 4);
    uint16_t klen;
    memcpy(&klen, p + 6, 2);
    uint8_t type = static_cast<uint8_t>(p[4]);
    if (magic != kMagic || type < LogRecord::kHeader || type > LogRecord::kDel) break;
    size_t len = kFixed + klen + kTrailer;
    if (data.size() - pos < len) break;  // torn tail
    if (Get64(p + kFixed + klen) != ChecksumOf(p, kFixed + klen)) break;
    LogRecord r;
    r.type = static_cast<LogRecord::Type>(type);
    r.offset = Get64(p + 8);
    r.size = Get64(p + 16);
    r.checksum = Get64(p + 24);
    r.key.assign(p + kFixed, klen);
    out.push_back(std::move(r));
    pos += len;
  }
  *valid_bytes = pos;
  return out;
}

Result<std::unique_ptr<IndexLog>> IndexLog::Open(const std::string& path, uint64_t capacity,
                                                 uint64_t alignment, Replayed* out) {
  auto data = ReadWhole(path);
  if (!data.ok()) return data.status();
  size_t valid = 0;
  std::vector<LogRecord> records = DecodeRecords(*data, &valid);
  out->dropped_bytes = data->size() - valid;
  std::map<uint64_t, LogRecord> live;
  bool foreign = false;  // the records since the last header are of another alignment
  for (LogRecord& r : records) {
    switch (r.type) {
      case LogRecord::kHeader:
        foreign = r.size != alignment;
        if (foreign) {
          out->old_alignment = r.size;
          live.clear();
        }
        if (r.offset != capacity) out->old_capacity = r.offset;
        break;
      case LogRecord::kAdd:
        if (!foreign && r.offset % alignment == 0 && r.size > 0 && r.checksum != 0 &&
            !r.key.empty()) {
          live[r.offset] = std::move(r);
        }
        break;
      case LogRecord::kDel:
        live.erase(r.offset);
        break;
    }
  }
  // Those that lie wholly in the data file as it is now sized are kept.
  for (auto it = live.begin(); it != live.end();) {
    const LogRecord& r = it->second;
    if (r.offset < capacity && r.size <= capacity - r.offset) {
      ++it;
    } else {
      ++out->dropped_objects;
      it = live.erase(it);
    }
  }
  if (out->old_alignment != 0) {
    // Count what the alignment change dropped: every ADD not deleted under the old layout.
    std::map<uint64_t, bool> old_live;
    for (const LogRecord& r : records) {
      if (r.type == LogRecord::kAdd) old_live[r.offset] = true;
      if (r.type == LogRecord::kDel) old_live.erase(r.offset);
    }
    out->dropped_objects = old_live.size();
  }
  // Overlaps cannot come from a consistent log; keep the first of two that overlap.
  uint64_t end = 0;
  for (auto& [offset, r] : live) {
    if (offset < end) continue;
    end = offset + ((r.size + alignment - 1) & ~(alignment - 1));
    out->live.push_back(std::move(r));
  }
  // Rewrite compactly: header + live ADDs, durable before it replaces the old log.
  std::string compact = EncodeRecord(LogRecord{LogRecord::kHeader, "", capacity, alignment, 0});
  for (const LogRecord& r : out->live) compact += EncodeRecord(r);
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status(ErrorCode::FILE_OPEN_FAIL, fmt::format("open {}: {}", tmp, strerror(errno)));
  }
  Status st = WriteAll(fd, compact, tmp);
  if (st.ok() && ::fdatasync(fd) != 0) {
    st = Status(ErrorCode::FILE_WRITE_FAIL, fmt::format("fdatasync {}: {}", tmp, strerror(errno)));
  }
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = Status(ErrorCode::FILE_WRITE_FAIL,
                fmt::format("rename {} -> {}: {}", tmp, path, strerror(errno)));
  }
  if (!st.ok()) return st;
  fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) {
    return Status(ErrorCode::FILE_OPEN_FAIL, fmt::format("open {}: {}", path, strerror(errno)));
  }
  return std::unique_ptr<IndexLog>(new IndexLog(path, fd));
}

IndexLog::~IndexLog() { ::close(fd_); }

Status IndexLog::Append(std::span<const LogRecord> records) {
  if (records.empty()) return Status::Ok();
  std::string data;
  for (const LogRecord& r : records) data += EncodeRecord(r);
  std::lock_guard lock(mu_);
  off_t before = ::lseek(fd_, 0, SEEK_END);
  Status st = WriteAll(fd_, data, path_);
  if (!st.ok()) {
    // A torn record mid-log would hide every later one at replay: cut it off now.
    if (before >= 0) (void)::ftruncate(fd_, before);
    return st;
  }
  if (::fdatasync(fd_) != 0) {
    return Status(ErrorCode::FILE_WRITE_FAIL,
                  fmt::format("fdatasync {}: {}", path_, strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace kvpool::disk
