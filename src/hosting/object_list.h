// The complete objects one segment holds, as its host knows them: kept up to date from the
// master's segment journal (rpc::SegmentJournal, delivered in ping replies) and sent back to
// the master when the segment re-registers after a master restart, so that the new master can
// rebuild its object table (docs/failure-model.md).
//
// Entries never overlap: a commit over a range replaces whatever overlapped it (the newer
// object wins), a free removes the object starting at its offset.
//
// Threading: thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "rpc/kvpool.pb.h"

namespace kvpool::hosting {

class ObjectList {
 public:
  // Applies one journal batch for this segment: a reset clears the list first; entries at or
  // below applied_seq() are skipped (a re-delivered batch). Returns entries applied.
  size_t Apply(const rpc::SegmentJournal& journal);
  // The last journal sequence number applied (0: none since Reset).
  uint64_t applied_seq() const;
  // Forgets the object starting at `offset` (its bytes are not what the list says).
  void Erase(uint64_t offset);
  // Forgets every object and the applied sequence (a new journal starts: a new mount).
  void Reset();
  // Keeps the objects, restarts the sequence (the same objects, re-registered at a new master).
  void RestartSequence();
  // The objects, in offset order.
  std::vector<rpc::StoredObject> Snapshot() const;
  size_t size() const;

 private:
  struct Entry {
    std::string key;
    uint64_t size = 0;
    uint64_t checksum = 0;
    uint32_t pin_flags = 0;
  };
  // REQUIRES: mu_ held.
  void CommitLocked(const rpc::JournalEntry& e);

  mutable std::mutex mu_;
  std::map<uint64_t, Entry> by_offset_;  // guarded by mu_
  uint64_t applied_seq_ = 0;             // guarded by mu_
};

}  // namespace kvpool::hosting
