#include "master/segment_journal.h"

#include <algorithm>

namespace kvpool::master {

void SegmentJournal::Append(Entry e) {
  e.seq = next_seq_++;
  if (entries_.size() >= capacity_) {
    // The host stopped acknowledging (or fell far behind): rather than grow without bound,
    // forget everything; the host learns that its list is void and clears it.
    entries_.clear();
    reset_seq_ = e.seq;
  }
  entries_.push_back(std::move(e));
}

void SegmentJournal::AppendCommit(uint64_t offset, uint64_t size, std::string_view key,
                                  uint64_t checksum, uint8_t pin_flags) {
  Append(Entry{0, false, pin_flags, offset, size, checksum, std::string(key)});
}

void SegmentJournal::AppendFree(uint64_t offset, uint64_t size) {
  Append(Entry{0, true, 0, offset, size, 0, {}});
}

void SegmentJournal::Ack(uint64_t applied_seq) {
  applied_seq = std::min(applied_seq, last_seq());
  acked_seq_ = std::max(acked_seq_, applied_seq);
  while (!entries_.empty() && entries_.front().seq <= applied_seq) entries_.pop_front();
}

bool SegmentJournal::HasAfter(uint64_t applied_seq) const {
  return applied_seq < last_seq() || (reset_seq_ != 0 && applied_seq < reset_seq_);
}

size_t SegmentJournal::Collect(uint64_t applied_seq, size_t max_entries,
                               rpc::SegmentJournal* out) const {
  if (reset_seq_ != 0 && applied_seq < reset_seq_) {
    out->set_reset(true);
    applied_seq = reset_seq_ - 1;  // entries from the reset on are still here
  }
  auto it = std::lower_bound(entries_.begin(), entries_.end(), applied_seq + 1,
                             [](const Entry& e, uint64_t seq) { return e.seq < seq; });
  size_t added = 0;
  for (; it != entries_.end() && added < max_entries; ++it, ++added) {
    rpc::JournalEntry* j = out->add_entries();
    j->set_seq(it->seq);
    j->set_freed(it->freed);
    j->set_offset(it->offset);
    j->set_size(it->size);
    if (!it->freed) {
      j->set_key(it->key);
      j->set_checksum(it->checksum);
      j->set_pin_flags(it->pin_flags);
    }
  }
  return added;
}

}  // namespace kvpool::master
