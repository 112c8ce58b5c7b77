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
// Threading: Done is called by the reading thread, WaitReady/Part by the sending coroutine.
#pragma once

#include <condition_variable>
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
  size_t WaitReady(size_t from) override;
  asio::const_buffer Part(size_t i) const override;

 private:
  void EndLocked(size_t i, const Status& st);  // REQUIRES: mu_ held, range i not ended
  void EncodeTrailerLocked();                  // REQUIRES: mu_ held, every range ended

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
};

}  // namespace kvpool::hosting
