// One segment's journal: the ordered changes to which objects its bytes hold (an object
// committed at a range, a range freed), kept until the segment's host acknowledges them.
//
// Why: the master's object table lives only in the master's memory. The host of a segment (a
// `kvpool node`, or an embedded client) learns of every change through its heartbeat and keeps
// its own list of the complete objects it stores; after a master restart it re-registers the
// segment with that list and the new master rebuilds its table (docs/failure-model.md).
//
// Sequence numbers start at 1 and grow by one per entry, per segment and master process. The
// journal holds at most `capacity` unacknowledged entries: past that it drops them all and
// remembers a reset, which the host must apply (clear its list) before newer entries.
//
// Threading: NOT thread-safe; the caller serialises every call (the segment's lock).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "rpc/kvpool.pb.h"

namespace kvpool::master {

class SegmentJournal {
 public:
  static constexpr size_t kDefaultCapacity = size_t{1} << 18;

  explicit SegmentJournal(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  void AppendCommit(uint64_t offset, uint64_t size, std::string_view key, uint64_t checksum,
                    uint8_t pin_flags);
  void AppendFree(uint64_t offset, uint64_t size);

  // Drops the entries up to `applied_seq` (the host has applied them). A sequence number
  // beyond the last one handed out is treated as "everything".
  void Ack(uint64_t applied_seq);
  // True when the host, having applied up to `applied_seq`, has something to apply.
  bool HasAfter(uint64_t applied_seq) const;
  // Fills `out` with up to `max_entries` entries after `applied_seq`, and `reset` when the host
  // must clear its list first. Returns the number of entries added.
  size_t Collect(uint64_t applied_seq, size_t max_entries, rpc::SegmentJournal* out) const;

  uint64_t last_seq() const { return next_seq_ - 1; }
  // The highest sequence number the host has acknowledged applying (0: none yet).
  uint64_t acked_seq() const { return acked_seq_; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t seq;
    bool freed;
    uint8_t pin_flags;
    uint64_t offset, size, checksum;
    std::string key;
  };
  void Append(Entry e);

  const size_t capacity_;
  std::deque<Entry> entries_;  // ascending seq, all > acked
  uint64_t next_seq_ = 1;
  uint64_t acked_seq_ = 0;
  uint64_t reset_seq_ = 0;  // a host that applied less than this must clear its list
};

}  // namespace kvpool::master
