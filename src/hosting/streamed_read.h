// One READ of a disk segment, streamed out while it is read: the reply's parts are its ranges in
// request order, then the status trailer (transfer/read_trailer.h). A range is ready once its
// bytes are in and checked against their checksum; the trailer once every range has ended.
// So the data server sends the first megabytes while the rest are still on the disk, instead of
// reading the whole request before the first byte goes out.
//
// A failed range (checksum mismatch, I/O error) is sent anyway (the header has promised its
// bytes) and named by the trailer. With per-range codes (DataRequest.range_status) the trailer
// carries each range's own code and the reader keeps the good ranges; without, the reader
// discards the whole reply.
//
// Threading: Done and FailRest are called by the reading thread; Ready, WaitReady,
// NotifyReady and Part by the one consumer (the sending coroutine, or a local reader).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/time.h"
#include "disk/disk_tier.h"
#include "rpc/server.h"
#include "transfer/read_trailer.h"

namespace kvpool::hosting {

class StreamedRead : public rpc::PayloadSource {
 public:
  // `ops` read into `buffer`. A range not ended by `give_up` is reported failed then (the
  // buffer stays owned by the reply, so a late completion lands in memory still held).
  // `range_codes`: the trailer carries each range's code after its 16 bytes.
  StreamedRead(std::shared_ptr<disk::AlignedBuffer> buffer, std::vector<disk::DiskTier::ReadOp> ops,
               Deadline give_up, bool range_codes = false);

  const std::vector<disk::DiskTier::ReadOp>& ops() const { return ops_; }
  const std::shared_ptr<disk::AlignedBuffer>& buffer() const { return buffer_; }
  // Range `i` ended with `st`. Once per range (later calls for it are ignored).
  void Done(size_t i, const Status& st);
  // Every range not ended yet ends with `st` (the read could not run).
  void FailRest(const Status& st);

  size_t parts() const override { return ops_.size() + 1; }
  uint64_t bytes() const override { return bytes_; }
  // Past the deadline given at construction, every range not ended yet is reported failed
  // (FILE_READ_FAIL: a hung disk) by the first of these to look.
  size_t Ready(size_t from) override;
  size_t WaitReady(size_t from) override;
  Deadline ReadyBy(size_t /*from*/) const override { return give_up_; }
  void NotifyReady(size_t from, std::function<void()> wake) override;
  asio::const_buffer Part(size_t i) const override;

 private:
  void EndLocked(size_t i, const Status& st);  // REQUIRES: mu_ held, range i not ended
  void EncodeTrailerLocked();                  // REQUIRES: mu_ held, every range ended
  bool ReadyLocked(size_t i) const;            // REQUIRES: mu_ held
  size_t CountReadyLocked(size_t from);        // REQUIRES: mu_ held; fails late ranges
  // Ends ranges and wakes the consumer when what it waits for is ready.
  template <typename EndRanges>
  void EndAndWake(EndRanges&& end);

  const std::shared_ptr<disk::AlignedBuffer> buffer_;
  const std::vector<disk::DiskTier::ReadOp> ops_;
  const Deadline give_up_;
  const bool range_codes_;
  uint64_t bytes_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> ended_;        // guarded by mu_
  size_t open_ranges_;             // guarded by mu_
  transfer::ReadTrailer verdict_;  // guarded by mu_
  std::vector<ErrorCode> codes_;   // guarded by mu_; each range's, when range_codes_
  std::vector<uint8_t> trailer_;   // sized at construction, written when all ended
  std::function<void()> wake_;     // guarded by mu_; NotifyReady's, until called
  size_t wake_for_ = 0;            // guarded by mu_; the part wake_ waits for
};

}  // namespace kvpool::hosting
