#include "hosting/object_list.h"

namespace kvpool::hosting {

size_t ObjectList::Apply(const rpc::SegmentJournal& journal) {
  std::lock_guard lock(mu_);
  if (journal.reset()) by_offset_.clear();
  size_t applied = 0;
  for (const rpc::JournalEntry& e : journal.entries()) {
    if (e.seq() <= applied_seq_ && !journal.reset()) continue;
    if (e.freed()) {
      by_offset_.erase(e.offset());
    } else {
      CommitLocked(e);
    }
    applied_seq_ = e.seq();
    ++applied;
  }
  return applied;
}

void ObjectList::CommitLocked(const rpc::JournalEntry& e) {
  const uint64_t begin = e.offset();
  const uint64_t end = begin + e.size();
  // Drop every entry overlapping [begin, end): the one starting before begin (if it reaches
  // in) and those starting inside.
  auto it = by_offset_.lower_bound(begin);
  if (it != by_offset_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.size > begin) by_offset_.erase(prev);
  }
  while (it != by_offset_.end() && it->first < end) it = by_offset_.erase(it);
  by_offset_[begin] = Entry{e.key(), e.size(), e.checksum(), e.pin_flags()};
}

uint64_t ObjectList::applied_seq() const {
  std::lock_guard lock(mu_);
  return applied_seq_;
}

void ObjectList::Erase(uint64_t offset) {
  std::lock_guard lock(mu_);
  by_offset_.erase(offset);
}

void ObjectList::Reset() {
  std::lock_guard lock(mu_);
  by_offset_.clear();
  applied_seq_ = 0;
}

void ObjectList::RestartSequence() {
  std::lock_guard lock(mu_);
  applied_seq_ = 0;
}

std::vector<rpc::StoredObject> ObjectList::Snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<rpc::StoredObject> out;
  out.reserve(by_offset_.size());
  for (const auto& [offset, e] : by_offset_) {
    rpc::StoredObject& o = out.emplace_back();
    o.set_key(e.key);
    o.set_offset(offset);
    o.set_size(e.size);
    o.set_checksum(e.checksum);
    o.set_pin_flags(e.pin_flags);
  }
  return out;
}

size_t ObjectList::size() const {
  std::lock_guard lock(mu_);
  return by_offset_.size();
}

}  // namespace kvpool::hosting
