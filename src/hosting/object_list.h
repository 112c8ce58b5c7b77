// The complete objects one segment holds, as its host knows them: kept up to date from the
// master's segment journal (rpc::SegmentJournal, delivered in ping replies) and sent back to
// the master when the segment re-registers after a master restart, so that the new master can
// rebuild its object table (docs/failure-model.md).
//
// Entries never overlap: a commit over a range replaces whatever overlapped it (the newer
// object wins), a free removes the object starting at its offset.
//
// An object also enters the list when a WRITE that names it is complete (RecordWrite), before
// the master commits it: a successor master learns of it from this list even if the journal
// entry of its commit never arrives, so a writer may be told of the commit without waiting
// for this host (docs/failure-model.md, "Commits recorded on write"). Such an entry outranks
// the journal entries that predate its range's allocation (they describe objects freed before)
// and yields to later ones like any other.
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
  // Lists `key` at [offset, offset + size) with `checksum` (of the bytes just written there),
  // replacing whatever overlapped the range, if master `master_epoch` placed it and the list
  // is open to that master's writes (OpenWrites); returns whether it did. `journal_seq` is the
  // segment journal's last sequence number when the master allocated the range
  // (Replica.journal_seq): journal entries up to it that touch the range are skipped.
  bool RecordWrite(uint64_t offset, std::string key, uint64_t size, uint64_t checksum,
                   uint64_t journal_seq, uint64_t master_epoch);
  // Writes placed by master `epoch` are listed from now on (the segment is mounted there).
  void OpenWrites(uint64_t epoch);
  // No write is listed until the next OpenWrites: the segment is being mounted again, and a
  // write listed after its list went to the new master would be known to no master.
  void CloseWrites();
  // Forgets the object starting at `offset` (its bytes are not what the list says).
  void Erase(uint64_t offset);
  // Keeps one entry per key, the newest, and forgets the others; returns how many. Two entries
  // of one key stand in the list when a write listed a new version before the FREE of the old
  // one arrived (a remove or an upsert, then a put, just before the master went away): the
  // one whose journal sequence number is higher (an allocation's, or a commit's) is the newer,
  // and an allocation made at a commit's number came after it.
  size_t DropSuperseded();
  // Forgets every object and the applied sequence (a new journal starts: a new mount).
  void Reset();
  // Keeps the objects, restarts the sequence (the same objects, re-registered at a new master,
  // which numbers its journal afresh: objects listed from writes become plain entries).
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
    bool from_write = false;  // listed by RecordWrite, not yet by the journal
    // The journal sequence number it stands at: its COMMIT's, or for an entry from a write the
    // last one before its range was allocated (entries up to it predate it). 0 after a
    // restarted sequence.
    uint64_t seq = 0;
  };
  using Map = std::map<uint64_t, Entry>;
  // The first entry overlapping [begin, end), or end(). REQUIRES: mu_ held.
  Map::iterator FirstOverlapLocked(uint64_t begin);
  // True when an entry listed from a write overlaps [begin, end) and outranks journal entry
  // `seq`. REQUIRES: mu_ held.
  bool WrittenAfterLocked(uint64_t begin, uint64_t end, uint64_t seq);
  // Replaces the entries overlapping [begin, begin + e.size) with `e`. REQUIRES: mu_ held.
  void PutLocked(uint64_t begin, Entry e);

  mutable std::mutex mu_;
  Map by_offset_;              // guarded by mu_
  uint64_t applied_seq_ = 0;   // guarded by mu_
  uint64_t writes_epoch_ = 0;  // guarded by mu_: see OpenWrites (0: closed)
};

}  // namespace kvpool::hosting
