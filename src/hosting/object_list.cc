#include "hosting/object_list.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace kvpool::hosting {

size_t ObjectList::Apply(const rpc::SegmentJournal& journal) {
  std::lock_guard lock(mu_);
  if (journal.reset()) by_offset_.clear();
  size_t applied = 0;
  for (const rpc::JournalEntry& e : journal.entries()) {
    if (e.seq() <= applied_seq_ && !journal.reset()) continue;
    if (WrittenAfterLocked(e.offset(), e.offset() + std::max<uint64_t>(e.size(), 1), e.seq())) {
      // An object freed before a write listed here reused its range: nothing to do.
    } else if (e.freed()) {
      by_offset_.erase(e.offset());
    } else {
      PutLocked(e.offset(), Entry{e.key(), e.size(), e.checksum(), e.pin_flags(), false, e.seq()});
    }
    applied_seq_ = e.seq();
    ++applied;
  }
  return applied;
}

ObjectList::Map::iterator ObjectList::FirstOverlapLocked(uint64_t begin) {
  auto it = by_offset_.lower_bound(begin);
  if (it != by_offset_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.size > begin) return prev;
  }
  return it;
}

bool ObjectList::WrittenAfterLocked(uint64_t begin, uint64_t end, uint64_t seq) {
  for (auto it = FirstOverlapLocked(begin); it != by_offset_.end() && it->first < end; ++it) {
    if (it->second.from_write && seq <= it->second.seq) return true;
  }
  return false;
}

void ObjectList::PutLocked(uint64_t begin, Entry e) {
  const uint64_t end = begin + e.size;
  auto it = FirstOverlapLocked(begin);
  while (it != by_offset_.end() && it->first < end) it = by_offset_.erase(it);
  by_offset_[begin] = std::move(e);
}

bool ObjectList::RecordWrite(uint64_t offset, std::string key, uint64_t size, uint64_t checksum,
                             uint64_t journal_seq, uint64_t master_epoch) {
  std::lock_guard lock(mu_);
  if (writes_epoch_ == 0 || master_epoch != writes_epoch_) return false;
  PutLocked(offset, Entry{std::move(key), size, checksum, 0, true, journal_seq});
  return true;
}

void ObjectList::OpenWrites(uint64_t epoch) {
  std::lock_guard lock(mu_);
  writes_epoch_ = epoch;
}

void ObjectList::CloseWrites() {
  std::lock_guard lock(mu_);
  writes_epoch_ = 0;
}

uint64_t ObjectList::applied_seq() const {
  std::lock_guard lock(mu_);
  return applied_seq_;
}

void ObjectList::Erase(uint64_t offset) {
  std::lock_guard lock(mu_);
  by_offset_.erase(offset);
}

size_t ObjectList::DropSuperseded() {
  std::lock_guard lock(mu_);
  std::unordered_map<std::string_view, Map::iterator> newest;
  std::vector<Map::iterator> superseded;
  for (auto it = by_offset_.begin(); it != by_offset_.end(); ++it) {
    auto [slot, fresh] = newest.try_emplace(it->second.key, it);
    if (fresh) continue;
    const Entry& kept = slot->second->second;
    const Entry& e = it->second;
    const bool newer = e.seq > kept.seq || (e.seq == kept.seq && e.from_write && !kept.from_write);
    superseded.push_back(newer ? slot->second : it);
    if (newer) slot->second = it;
  }
  for (auto it : superseded) by_offset_.erase(it);
  return superseded.size();
}

void ObjectList::Reset() {
  std::lock_guard lock(mu_);
  by_offset_.clear();
  applied_seq_ = 0;
}

void ObjectList::RestartSequence() {
  std::lock_guard lock(mu_);
  applied_seq_ = 0;
  for (auto& [offset, e] : by_offset_) {
    e.from_write = false;
    e.seq = 0;
  }
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
