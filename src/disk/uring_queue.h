// Batched file I/O through io_uring with a bounded queue depth.
//
// One UringQueue owns one ring. Run() submits a batch of reads or writes of one file, keeping at
// most `depth` of them in flight, resubmits short transfers for their remainder, and returns
// when every operation finished (or the first error, after reaping what was in flight, so no
// completion ever lands in a buffer the caller has freed).
//
// Threading: thread-safe; Run() calls are serialised on the ring's mutex (callers wanting
// parallel I/O use one queue each). Errors: FILE_READ_FAIL / FILE_WRITE_FAIL naming the
// offset, length and errno; INTERNAL_ERROR when the ring cannot be set up.
#pragma once

#include <liburing.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "kvpool/status.h"

namespace kvpool::disk {

struct IoOp {
  bool write = false;
  uint64_t offset = 0;  // in the file
  uint8_t* buf = nullptr;
  uint64_t length = 0;
};

class UringQueue {
 public:
  // REQUIRES: 1 <= depth <= 4096.
  static Result<std::unique_ptr<UringQueue>> Create(uint32_t depth);
  ~UringQueue();
  UringQueue(const UringQueue&) = delete;
  UringQueue& operator=(const UringQueue&) = delete;

  uint32_t depth() const { return depth_; }
  // Performs every op on `fd` (a read that hits end of file is an error). `what` names the
  // file in error messages.
  Status Run(int fd, std::span<const IoOp> ops, const char* what);

 private:
  explicit UringQueue(uint32_t depth) : depth_(depth) {}
  const uint32_t depth_;
  std::mutex mu_;
  io_uring ring_{};  // guarded by mu_
};

}  // namespace kvpool::disk
