// A segment host's disk tier at work: the disk::DiskTier below its DRAM segment, mounted at the
// master as a second segment ("<dram name>#disk", tier TIER_DISK, served at the same endpoint).
//
// Offload: every object committed to the DRAM segment (the master's journal tells) is queued
// and copied to disk in the background, ahead of any eviction, so puts never wait for the disk
// while DRAM has room (and, once it is full of objects not yet on disk, wait for the disk
// rather than lose them: MasterOptions::disk_offload_wait). Two threads in a pipeline: the
// stager copies a batch out of DRAM into an aligned buffer and checks the copy against each
// object's checksum (a range freed and rewritten meanwhile is skipped) while the offload thread
// writes the previous batch; a copy is reported to the master (TIER_UPDATE added) only after
// it is durable. When the master later evicts the DRAM copy, the disk copy keeps the
// object. A full tier evicts its least recently used objects: the master unlists them first
// (TIER_UPDATE dropped; a reader's lease keeps one), then their space is freed.
//
// Space is freed only when the master no longer lists the object there: a drop it confirmed, an
// add it refused, or a FREE in the disk segment's journal (a remove, an upsert, a re-mount
// that did not keep it). So a range is never reused while a reader may be sent to it.
//
// Reads: DataService hands READs of the disk segment to Read(), which reads the ranges (whole
// objects) through io_uring into one aligned buffer and checks each against its checksum
// (CHECKSUM_MISMATCH, never wrong bytes). A READ that asks for a status trailer (every kvpool
// client's) is streamed (hosting/streamed_read.h): one of the host's reader threads runs the
// I/O while the data server sends each range as soon as it has landed and passed its check,
// so the disk and the socket work at once; the trailer says whether every range was good.
// Other READs are read whole, then answered.
//
// Bad objects: when a READ fails (an I/O error, a checksum mismatch), the background thread
// reads each of its objects again on its own; one that fails again is unlisted at the master
// and its space freed, so readers get OBJECT_NOT_FOUND (a miss) instead of the same error on
// every read. Objects that read back fine stay.
//
// Promotion: an object read from disk promote_after_hits times is copied back into the DRAM
// segment by the background thread (PROMOTE in kvpool.proto): the master reserves a range, the
// thread reads the object from disk again (checksum checked) into it, and the master lists it
// as the object's DRAM replica. Reads never wait for it; any failure leaves the object on disk.
//
// Threading: thread-safe. Owns the offload thread, the stager and the reader threads; Stop()
// (or the destructor) joins them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/time.h"
#include "disk/disk_tier.h"
#include "disk/read_buffers.h"
#include "master_client/master_client.h"
#include "rpc/kvpool.pb.h"
#include "transfer/segment_table.h"
#include "transfer/tier_reader.h"

namespace kvpool::hosting {

struct DiskHostOptions {
  disk::DiskTierOptions tier;
  size_t offload_queue = 16384;  // objects waiting for the disk; beyond it they are not offloaded
  uint64_t batch_bytes = 32 << 20;  // bytes per offload batch (one fdatasync, one TIER_UPDATE)
  // Reads from disk after which an object is copied back to DRAM (0: never).
  uint32_t promote_after_hits = 2;
  Clock::duration rpc_timeout = std::chrono::seconds(5);
};

struct DiskHostStats {
  disk::DiskTierStats tier;
  uint64_t offload_queue_depth = 0;
  uint64_t offloaded = 0;           // objects copied to disk and listed by the master
  uint64_t offload_skipped = 0;     // no checksum recorded, or the bytes changed before the copy
  uint64_t offload_dropped = 0;     // queue full
  uint64_t offload_failed = 0;      // no room, I/O error, or the master refused it
  uint64_t evicted = 0;             // objects the tier evicted (least recently used)
  uint64_t read_requests = 0;       // READs served from disk
  uint64_t read_failures = 0;       // of which failed (checksum, I/O, unknown range)
  uint64_t direct_reads = 0;        // of which read straight into the caller's memory (ReadInto)
  uint64_t promoted = 0;            // objects copied back to DRAM and listed there by the master
  uint64_t promote_failed = 0;      // promotions given up (no DRAM room, I/O, refused, queue full)
  uint64_t dropped_unreadable = 0;  // objects unlisted because they failed a second read
};

class StreamedRead;

class DiskHost : public transfer::TierReader {
 public:
  // Opens the tier (errors as disk::DiskTier::Open: the path and the need are named).
  static Result<std::unique_ptr<DiskHost>> Open(const DiskHostOptions& options);
  ~DiskHost() override;

  // Names the DRAM segment this tier sits below and where its memory is; once, before Mount.
  // `dram` must outlive the host.
  void Bind(const std::string& dram_name, const transfer::SegmentTable* dram);
  // "<dram name>#disk".
  const std::string& name() const { return name_; }
  uint64_t incarnation() const { return incarnation_; }
  disk::DiskTier& tier() { return *tier_; }

  // Mounts the disk segment, listing every object the tier holds (a restarted host's disk
  // objects are listed again this way), and starts the offloader. `master` must outlive the
  // host (or Stop()). Errors: as MasterClient::MountSegmentAs.
  Status Mount(master::MasterClient& master, Deadline deadline);
  // Stops the offloader (queued objects are not offloaded). Idempotent.
  void Stop();

  // Heartbeat plumbing for the disk segment's journal (FREE entries free disk space).
  rpc::JournalAck JournalAck() const;
  void ApplyJournal(const rpc::SegmentJournal& journal);
  // Queues a DRAM commit for offload (never blocks; a full queue drops it, counted).
  void Offload(const rpc::JournalEntry& commit);

  std::optional<rpc::Reply> Read(const rpc::DataRequest& req) override;
  // In-process reads (a standalone engine's gets through its node, an embedded client's of its
  // own tier): when every range is a whole number of the tier's alignment() and lands at an
  // aligned address of one `dst` iovec, the disk reads straight into `dst` (checksums checked
  // there). A disk that never completes I/O, even cancelled, may write `dst` after the error
  // return (disk/uring_queue.h, "wedged"): the tier then refuses all later I/O.
  // Each range's outcome is its own (`range_status`, TierReader::ReadInto).
  std::optional<Status> ReadInto(const rpc::DataRequest& req, std::span<const iovec> dst,
                                 std::vector<Status>* range_status) override;
  // Called before the DRAM segment is mounted (again): waits for a promotion fill in progress
  // and makes every reservation asked for before it void (never filled, only cancelled). A
  // master that lists the segment anew may place puts in any range it sees free, reserved
  // ones included. Thread-safe.
  void FenceFills();
  DiskHostStats stats() const;

 private:
  struct Pending {
    std::string key;
    uint64_t offset = 0;  // in the DRAM segment
    uint64_t size = 0;
    uint64_t checksum = 0;
  };
  struct Retry {
    disk::DiskObject obj;
    Clock::time_point due;
    int tries = 0;
  };
  // A batch copied out of DRAM and checked (disk_offload.cc), waiting to be written: `items`
  // point into `buffer` and their keys into `batch`.
  struct StagedBatch {
    std::vector<Pending> batch;
    std::shared_ptr<disk::AlignedBuffer> buffer;
    std::vector<disk::DiskTier::WriteItem> items;
  };
  explicit DiskHost(const DiskHostOptions& options, std::unique_ptr<disk::DiskTier> tier);
  // Takes from the front of `queue` the items that fit in `max_bytes` (at least one, when any).
  template <typename T>
  static std::vector<T> TakeBatch(std::deque<T>& queue, uint64_t max_bytes) {
    std::vector<T> out;
    uint64_t bytes = 0;
    while (!queue.empty() && (out.empty() || bytes + queue.front().size <= max_bytes)) {
      bytes += queue.front().size;
      out.push_back(std::move(queue.front()));
      queue.pop_front();
    }
    return out;
  }
  void Run();
  // The stager's loop: takes up to batch_bytes from the queue whenever the staged slot is
  // empty, and stages it.
  void StageLoop();
  StagedBatch Stage(std::vector<Pending> batch);
  // Writes a staged batch (evicting from the tier when it is full), then reports it.
  void WriteStaged(StagedBatch staged);
  // Reports `written` to the master; what it refused is freed, what it could not take now is
  // retried later.
  void ReportAdds(std::vector<disk::DiskObject> written, int tries);
  void RetryDue();
  // Re-reads each object of a failed READ alone; unlists (master first) and frees those that
  // fail again.
  void CheckSuspects(std::vector<disk::DiskObject> suspects);
  // Counts a hit on each object read by `ops`; queues those that reached promote_after_hits.
  void CountHits(std::span<const disk::DiskTier::ReadOp> ops);
  // Reads (disk_reads.cc). The ranges of `req` checked against the tier's objects, and a
  // buffer with the ops that read them into it; INVALID_READ / SEGMENT_NOT_FOUND otherwise.
  struct PreparedRead {
    std::shared_ptr<disk::AlignedBuffer> buffer;
    std::vector<disk::DiskTier::ReadOp> ops;
  };
  Result<PreparedRead> PrepareRead(const rpc::DataRequest& req);
  // SEGMENT_NOT_FOUND when `req` names another incarnation of this segment (its host restarted).
  Status CheckIncarnation(const rpc::DataRequest& req) const;
  // PrepareRead's checks before it sizes a buffer: the incarnation, each range a listed object,
  // all of them within the tier's size. Returns the bytes the ranges reserve on disk.
  Result<uint64_t> CheckReadRanges(const rpc::DataRequest& req) const;
  // After a read's I/O, `each` holding one status per op: counts hits on the ops that read
  // good, and queues the objects of the others to check again.
  void NoteReadResult(std::span<const disk::DiskTier::ReadOp> ops, std::span<const Status> each);
  void StartReaders();
  void StopReaders();  // joins them; queued reads fail with UNAVAILABLE_IN_CURRENT_STATUS
  void ReaderLoop();
  // Promotes `objects` (disk offsets) into the DRAM segment: reserve, fill, commit.
  void PromoteBatch(std::vector<disk::DiskObject> objects);
  // Commits filled promotion ranges (retrying while a reader holds the object); returns how
  // many the master listed.
  size_t CommitPromotions(master::MasterClient& master,
                          const std::vector<std::pair<disk::DiskObject, uint64_t>>& filled);
  // TIER_UPDATE of this disk segment (codes: one per added, then per dropped).
  Result<rpc::CodesReply> SendTierUpdate(std::span<const disk::DiskObject> added,
                                         std::span<const disk::DiskObject> dropped);
  // Asks the master to unlist `objects` from the disk segment. Adds to *frees the offsets now
  // free to reuse, marks those the master had freed already (their FREE is on its way), and
  // moves those a reader holds into *held (when not null). False: the master did not answer
  // (nothing may be freed).
  bool Unlist(std::vector<disk::DiskObject>& objects, std::vector<uint64_t>* frees,
              std::vector<disk::DiskObject>* held);
  // Evicts least recently used objects (master first) until about `need` bytes are free.
  void MakeRoom(uint64_t need);
  static rpc::StoredObject Stored(const disk::DiskObject& o);

  const DiskHostOptions options_;
  std::unique_ptr<disk::DiskTier> tier_;
  std::string name_, dram_name_;  // set by Bind, before the data server names it anywhere
  const transfer::SegmentTable* dram_ = nullptr;
  const uint64_t incarnation_;
  std::atomic<bool> bound_{false};
  // READ buffers, reused (disk/read_buffers.h): at most kKeptReadBufferBytes idle.
  static constexpr uint64_t kKeptReadBufferBytes = 256ull << 20;
  const std::shared_ptr<disk::ReadBuffers> read_buffers_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;          // guarded by mu_
  std::condition_variable stage_cv_;   // the stager waits on it
  std::optional<StagedBatch> staged_;  // guarded by mu_: at most one waits
  std::thread stager_;
  bool stop_ = false;                            // guarded by mu_
  master::MasterClient* master_ = nullptr;       // guarded by mu_ (set by the first Mount)
  uint64_t applied_seq_ = 0;                     // guarded by mu_
  uint64_t mounted_id_ = 0, mounted_epoch_ = 0;  // guarded by mu_
  std::thread thread_;

  // Offload thread only.
  std::vector<Retry> retries_;
  // Unreadable objects a reader held when they were to be unlisted: tried again when due.
  std::vector<Retry> suspect_retries_;
  // Offsets the master no longer lists, whose FREE is on its way. Guarded by mu_.
  std::unordered_set<uint64_t> doomed_;
  // Promotion (guarded by mu_): reads per disk offset since the last promotion try (bounded:
  // cleared when it grows past kMaxTrackedHits), objects due, and the DRAM offsets (with keys)
  // being committed by promotion, whose journal commit must not be offloaded again.
  static constexpr size_t kMaxTrackedHits = 1 << 16;
  static constexpr size_t kMaxQueuedPromotions = 1024;
  // Most objects of failed READs waiting to be checked again.
  static constexpr size_t kMaxSuspects = 4096;
  std::unordered_map<uint64_t, uint32_t> hits_;
  std::deque<disk::DiskObject> promote_queue_;
  std::unordered_map<uint64_t, std::string> promoting_dram_;
  // Objects of failed READs, to check again (guarded by mu_; bounded like promote_queue_).
  std::deque<disk::DiskObject> suspects_;
  std::atomic<bool> master_error_logged_{false};

  std::atomic<uint64_t> offloaded_{0}, skipped_{0}, dropped_{0}, failed_{0}, evicted_{0};
  std::atomic<uint64_t> read_requests_{0}, read_failures_{0}, direct_reads_{0};
  std::atomic<uint64_t> promoted_{0}, promote_failed_{0}, dropped_unreadable_{0};
  // Streamed reads waiting for a reader thread (disk_reads.cc). One thread per read ring, so
  // every ring can have a read in flight.
  std::mutex readers_mu_;
  std::condition_variable readers_cv_;
  std::deque<std::shared_ptr<StreamedRead>> read_jobs_;  // guarded by readers_mu_
  bool readers_stop_ = false;                            // guarded by readers_mu_
  std::vector<std::thread> readers_;
  // Promotion fills run under fill_mu_ shared; FenceFills takes it exclusively and bumps the
  // generation, which voids the reservations of fills started before.
  std::shared_mutex fill_mu_;
  std::atomic<uint64_t> fill_generation_{0};
};

}  // namespace kvpool::hosting
