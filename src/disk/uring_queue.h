// Batched file I/O through io_uring with a bounded queue depth.
//
// One UringQueue owns one ring. Run() submits a batch of reads or writes of one file, keeping at
// most `depth` of them in flight, resubmits short transfers for their remainder, and returns
// when every operation finished (or the first error, after reaping what was in flight, so no
// completion ever lands in a buffer the caller has freed).
//
// Deadline: a disk that stops answering must not hold the caller (a data server thread, the
// offloader that shutdown joins) forever. When the deadline passes, Run() cancels what is in
// flight and waits up to kCancelGrace for those to end. Should some never end (I/O the device
// holds cannot always be cancelled), the ring is wedged: Run() returns anyway, keeps `pin` (the
// owner of the batch's buffers) for good so a late completion never lands in reused memory,
// and refuses every later batch.
//
// Threading: thread-safe; Run() calls are serialised on the ring's mutex (callers wanting
// parallel I/O use one queue each). Errors: FILE_READ_FAIL / FILE_WRITE_FAIL naming the
// offset, length and errno, or the deadline that passed, or a wedged ring; INTERNAL_ERROR when
// the ring cannot be set up.
#pragma once

#include <liburing.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/time.h"
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

  // How long Run() waits, after cancelling at the deadline, for the cancelled ops to end.
  static constexpr std::chrono::seconds kCancelGrace{1};

  uint32_t depth() const { return depth_; }
  // Performs every op on `fd` (a read that hits end of file is an error) by `deadline`. `what`
  // names the file in error messages. `pin` owns the ops' buffers (empty: the caller keeps
  // them valid for the queue's lifetime); it is kept only if the ring wedges. `on_done`
  // (optional) is called on the calling thread with an op's index as soon as all of its bytes
  // have moved, while later ops are still in flight (so a reader can send what has arrived).
  Status Run(int fd, std::span<const IoOp> ops, const char* what, Deadline deadline,
             std::shared_ptr<const void> pin = {}, const std::function<void(size_t)>& on_done = {});

 private:
  explicit UringQueue(uint32_t depth) : depth_(depth) {}
  // Marks the ring unusable; `pin`'s buffers may still be written by the kernel.
  void Wedge(std::shared_ptr<const void> pin);

  const uint32_t depth_;
  std::mutex mu_;
  io_uring ring_{};                                     // guarded by mu_
  bool wedged_ = false;                                 // guarded by mu_
  std::vector<std::shared_ptr<const void>> abandoned_;  // guarded by mu_; never freed
};

}  // namespace kvpool::disk
