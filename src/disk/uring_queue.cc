#include "disk/uring_queue.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace kvpool::disk {

Result<std::unique_ptr<UringQueue>> UringQueue::Create(uint32_t depth) {
  if (depth == 0 || depth > 4096) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("disk queue depth {} is not in [1, 4096]", depth));
  }
  std::unique_ptr<UringQueue> q(new UringQueue(depth));
  int rc = io_uring_queue_init(depth, &q->ring_, 0);
  if (rc < 0) {
    q->ring_.ring_fd = -1;
    return Status(ErrorCode::INTERNAL_ERROR,
                  fmt::format("io_uring_queue_init(depth={}) failed: {}", depth, strerror(-rc)));
  }
  return q;
}

UringQueue::~UringQueue() {
  if (ring_.ring_fd >= 0) io_uring_queue_exit(&ring_);
  // The kernel may still finish a wedged ring's I/O after the ring is gone: its buffers stay.
  for (auto& pin : abandoned_) new std::shared_ptr<const void>(std::move(pin));
}

void UringQueue::Wedge(std::shared_ptr<const void> pin) {
  wedged_ = true;
  if (pin) abandoned_.push_back(std::move(pin));
}

namespace {

constexpr uint64_t kCancelTag = ~uint64_t{0};  // user data of the cancel request

__kernel_timespec TimespecUntil(Deadline until) {
  auto left = std::max(Clock::duration::zero(), until - Clock::now());
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  return __kernel_timespec{ns / 1000000000, ns % 1000000000};
}

}  // namespace

Status UringQueue::Run(int fd, std::span<const IoOp> ops, const char* what, Deadline deadline,
                       std::shared_ptr<const void> pin,
                       const std::function<void(size_t)>& on_done) {
  std::lock_guard lock(mu_);
  const bool writes = !ops.empty() && ops[0].write;
  const ErrorCode fail = writes ? ErrorCode::FILE_WRITE_FAIL : ErrorCode::FILE_READ_FAIL;
  if (wedged_) {
    return Status(fail, fmt::format("{} {}: an earlier batch's I/O never ended (a hung disk); "
                                    "restart the node once the disk answers",
                                    writes ? "write" : "read", what));
  }
  const Deadline start = Clock::now();
  Deadline give_up = deadline;  // after the cancel: deadline + kCancelGrace
  bool cancelled = false;
  std::vector<uint64_t> done(ops.size(), 0);
  std::vector<size_t> retry;  // ops with a short transfer, to resubmit for their rest
  size_t next = 0;
  uint32_t inflight = 0;
  Status first;
  auto submit_one = [&](size_t i) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    const IoOp& op = ops[i];
    uint8_t* buf = op.buf + done[i];
    unsigned len = static_cast<unsigned>(std::min<uint64_t>(op.length - done[i], 1u << 30));
    uint64_t off = op.offset + done[i];
    if (op.write) {
      io_uring_prep_write(sqe, fd, buf, len, off);
    } else {
      io_uring_prep_read(sqe, fd, buf, len, off);
    }
    io_uring_sqe_set_data64(sqe, i);
    ++inflight;
  };
  while (true) {
    if (first.ok()) {
      while (inflight < depth_ && (!retry.empty() || next < ops.size())) {
        size_t i;
        if (!retry.empty()) {
          i = retry.back();
          retry.pop_back();
        } else {
          i = next++;
        }
        if (ops[i].length == 0) {
          if (on_done) on_done(i);
          continue;
        }
        submit_one(i);
      }
    }
    if (inflight == 0) break;
    __kernel_timespec ts = TimespecUntil(cancelled ? give_up : deadline);
    io_uring_cqe* cqe = nullptr;
    int rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
    if (rc == -ETIME && cancelled) {
      Wedge(std::move(pin));
      return Status(
          fail,
          fmt::format(
              "{} {}: {} of {} I/Os did not end, even cancelled, within "
              "{} ms (a hung disk); this ring takes no more batches",
              writes ? "write" : "read", what, inflight, ops.size(),
              std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count()));
    }
    if (rc == -ETIME) {
      if (first.ok()) {
        first = Status(
            fail,
            fmt::format("{} {}: {} of {} I/Os not done after {} ms (a hung disk?); cancelled",
                        writes ? "write" : "read", what, inflight, ops.size(),
                        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start)
                            .count()));
      }
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
      io_uring_sqe_set_data64(sqe, kCancelTag);
      cancelled = true;
      give_up = Clock::now() + kCancelGrace;
      continue;
    }
    if (rc < 0 && rc != -EINTR) {
      // The ring is unusable: nothing more can be reaped safely, so report and stop here.
      Wedge(std::move(pin));
      return Status(ErrorCode::INTERNAL_ERROR,
                    fmt::format("io_uring_submit_and_wait on {}: {}", what, strerror(-rc)));
    }
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      if (io_uring_cqe_get_data64(cqe) == kCancelTag) continue;
      --inflight;
      size_t i = io_uring_cqe_get_data64(cqe);
      const IoOp& op = ops[i];
      int res = cqe->res;
      if (res <= 0) {  // 0: end of file (read) or no progress (write)
        if (first.ok()) {
          first = Status(op.write ? ErrorCode::FILE_WRITE_FAIL : ErrorCode::FILE_READ_FAIL,
                         fmt::format("{} {} offset={} length={}: {}", op.write ? "write" : "read",
                                     what, op.offset + done[i], op.length - done[i],
                                     res < 0 ? strerror(-res) : "end of file"));
        }
        continue;
      }
      done[i] += static_cast<uint64_t>(res);
      if (done[i] < op.length) {
        retry.push_back(i);
      } else if (on_done && first.ok()) {
        on_done(i);
      }
    }
    io_uring_cq_advance(&ring_, seen);
  }
  return first;
}

}  // namespace kvpool::disk
