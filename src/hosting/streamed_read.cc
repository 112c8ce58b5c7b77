#include "hosting/streamed_read.h"

#include <algorithm>

namespace kvpool::hosting {

StreamedRead::StreamedRead(std::shared_ptr<disk::AlignedBuffer> buffer,
                           std::vector<disk::DiskTier::ReadOp> ops, Deadline give_up,
                           bool range_codes)
    : buffer_(std::move(buffer)),
      ops_(std::move(ops)),
      give_up_(give_up),
      range_codes_(range_codes),
      ended_(ops_.size(), false),
      open_ranges_(ops_.size()),
      trailer_(transfer::ReadTrailerBytes(ops_.size(), range_codes)) {
  bytes_ = trailer_.size();
  for (const auto& op : ops_) bytes_ += op.length;
  if (range_codes_) codes_.assign(ops_.size(), ErrorCode::OK);
  if (open_ranges_ == 0) EncodeTrailerLocked();  // no other thread sees it yet
}

void StreamedRead::EncodeTrailerLocked() {
  const auto head = verdict_.Encode();
  std::copy(head.begin(), head.end(), trailer_.begin());
  for (size_t i = 0; i < codes_.size(); ++i) {
    transfer::EncodeRangeCode(codes_[i], trailer_.data() + transfer::ReadTrailer::kBytes +
                                             i * transfer::ReadTrailer::kRangeCodeBytes);
  }
}

void StreamedRead::EndLocked(size_t i, const Status& st) {
  ended_[i] = true;
  if (!st.ok() && verdict_.code == ErrorCode::OK) {
    verdict_ = transfer::ReadTrailer{st.code(), static_cast<uint32_t>(i)};
  }
  if (range_codes_) codes_[i] = st.code();
  if (--open_ranges_ == 0) EncodeTrailerLocked();
}

template <typename EndRanges>
void StreamedRead::EndAndWake(EndRanges&& end) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    end();
    if (wake_ && ReadyLocked(wake_for_)) {
      wake = std::move(wake_);
      wake_ = nullptr;
    }
  }
  cv_.notify_all();
  if (wake) wake();  // outside the lock: it may post to another thread's event loop
}

void StreamedRead::Done(size_t i, const Status& st) {
  EndAndWake([&] {
    if (i < ended_.size() && !ended_[i]) EndLocked(i, st);
  });
}

void StreamedRead::FailRest(const Status& st) {
  EndAndWake([&] {
    for (size_t i = 0; i < ended_.size(); ++i) {
      if (!ended_[i]) EndLocked(i, st);
    }
  });
}

bool StreamedRead::ReadyLocked(size_t i) const {
  return i < ended_.size() ? ended_[i] : open_ranges_ == 0;
}

size_t StreamedRead::CountReadyLocked(size_t from) {
  if (!ReadyLocked(from) && Clock::now() >= give_up_) {
    const Status late(ErrorCode::FILE_READ_FAIL,
                      "the disk read did not end within its deadline (a hung disk?)");
    for (size_t i = 0; i < ended_.size(); ++i) {
      if (!ended_[i]) EndLocked(i, late);
    }
  }
  size_t n = 0;
  while (from + n < parts() && ReadyLocked(from + n)) ++n;
  return n;
}

size_t StreamedRead::Ready(size_t from) {
  std::lock_guard lock(mu_);
  return CountReadyLocked(from);
}

size_t StreamedRead::WaitReady(size_t from) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, give_up_, [&] { return ReadyLocked(from); });
  return CountReadyLocked(from);
}

void StreamedRead::NotifyReady(size_t from, std::function<void()> wake) {
  {
    std::lock_guard lock(mu_);
    if (!ReadyLocked(from)) {
      wake_ = std::move(wake);
      wake_for_ = from;
      return;
    }
    wake_ = nullptr;
  }
  wake();
}

asio::const_buffer StreamedRead::Part(size_t i) const {
  if (i < ops_.size()) return asio::const_buffer(ops_[i].dst, ops_[i].length);
  return asio::const_buffer(trailer_.data(), trailer_.size());
}

}  // namespace kvpool::hosting
