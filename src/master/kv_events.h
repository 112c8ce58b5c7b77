// KV events: what the master tells cache-aware routers about the objects it holds, in vLLM's
// KV-events wire format (docs/operations.md, "KV events").
//
// The master's operations record events into a KvEventQueue (bounded, never blocking: a full
// queue drops the event and counts it); master/kv_event_publisher.h drains it on its own thread,
// encodes batches with EncodeKvEventBatch and publishes them over ZMQ. Nothing here touches the
// network, so the master's hot path pays one mutex and one key copy per event, and nothing at
// all while events are off (MasterCore holds no queue then).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kvpool::master {

// The master's --kv_events_* flags (master_options.h documents each).
struct KvEventOptions {
  std::string endpoint;         // PUB socket bound ("tcp://*:5557"); "" turns events off
  std::string replay_endpoint;  // ROUTER socket bound; "" serves no replay
  std::string topic = "kvpool";
  size_t queue_capacity = 100000;  // events waiting for the thread
  size_t replay_batches = 10000;   // batches kept for replay
  uint32_t block_size = 0;         // BlockStored.block_size (tokens per block; 0: unknown)
};

enum class KvEventKind : uint8_t { kStored, kRemoved, kCleared };
// vLLM's `medium`: which tier holds (or held) the block.
enum class KvMedium : uint8_t { kDram, kDisk };
// Why a block left a medium. Routers reading vLLM's format see a BlockRemoved either way; the
// reason travels in the ZMQ topic (KvEventTopicSuffix), which vLLM's subscribers ignore.
enum class KvRemoval : uint8_t {
  kNone,                // stored and cleared events
  kRemoved,             // a client's remove / remove_all
  kEvictedWatermark,    // background eviction above --eviction_high_watermark_ratio
  kEvictedPut,          // a put needed the room
  kEvictedTenantQuota,  // a put of the same tenant needed room under its quota
  kEvictedDisk,         // the disk tier's host evicted its copy
  kDropped,             // its segment was unmounted or its writer died: the bytes are gone
};

// "DRAM" or "DISK".
std::string_view KvMediumName(KvMedium m);
// "" (kNone, kRemoved), ".evicted.watermark", ".evicted.put", ".evicted.tenant_quota",
// ".evicted.disk", ".dropped": appended to the base topic.
std::string_view KvEventTopicSuffix(KvRemoval why);

struct KvEvent {
  KvEventKind kind = KvEventKind::kStored;
  KvMedium medium = KvMedium::kDram;
  KvRemoval why = KvRemoval::kNone;
  std::string key;  // empty for kCleared
};

// A bounded multi-producer queue with one consumer. Threading: every method is thread-safe.
class KvEventQueue {
 public:
  // REQUIRES: capacity >= 1.
  explicit KvEventQueue(size_t capacity) : capacity_(capacity) {}
  KvEventQueue(const KvEventQueue&) = delete;
  KvEventQueue& operator=(const KvEventQueue&) = delete;

  // Never blocks on the consumer: when `capacity` events wait already, the event is dropped
  // and dropped() counts it (a slow subscriber or a stalled publisher never slows a put).
  void Add(KvEventKind kind, KvMedium medium, KvRemoval why, std::string_view key);
  // Moves up to `max` waiting events into `out` (appended); returns how many.
  size_t Drain(std::vector<KvEvent>* out, size_t max);

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::deque<KvEvent> events_;  // guarded by mu_
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> accepted_{0};
};

// Records `key` leaving each medium it was on (DRAM, DISK). No-op when `q` is null (events
// off). Thread-safe.
inline void RecordRemoved(KvEventQueue* q, std::string_view key, bool dram, bool disk,
                          KvRemoval why) {
  if (q == nullptr) return;
  if (dram) q->Add(KvEventKind::kRemoved, KvMedium::kDram, why, key);
  if (disk) q->Add(KvEventKind::kRemoved, KvMedium::kDisk, why, key);
}
inline void RecordStored(KvEventQueue* q, std::string_view key, KvMedium medium) {
  if (q != nullptr) q->Add(KvEventKind::kStored, medium, KvRemoval::kNone, key);
}

// The block hash a router sees for a kvpool key: vLLM's ExternalBlockHash (bytes or int).
// A key that carries a hash (SGLang's page keys "<sha256 hex>_<rank>_k", the Mooncake and
// LMCache connectors' "...@<hex chunk hash>") gives the bytes of its longest run of at least 16
// hex digits (the last one on a tie; an odd-length run drops its first digit), so the hash is
// the engine's own. Any other key gives XXH3-64 of the whole key with the top bit cleared (an
// int that signed 64-bit consumers read unchanged). Thread-safe (pure).
using KvBlockHash = std::variant<std::string, uint64_t>;
KvBlockHash KeyBlockHash(std::string_view key);

// One EventBatch, msgpack-encoded as vLLM's msgspec structs with array_like=True encode it:
//   [ts, [event...]]
// where consecutive events of one kind, medium and reason become one event:
//   ["BlockStored", [hash...], None, [], block_size, None, medium, None]
//     (block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, lora_name)
//   ["BlockRemoved", [hash...], medium]
//   ["AllBlocksCleared"]
// REQUIRES: every event of `events` has the same `why` (one topic per batch). Thread-safe.
std::string EncodeKvEventBatch(double ts, std::span<const KvEvent> events, uint32_t block_size);

}  // namespace kvpool::master
