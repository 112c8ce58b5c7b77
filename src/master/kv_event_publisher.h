// The master's KV-event publisher (docs/operations.md, "KV events"): drains a KvEventQueue on
// its own thread and publishes vLLM-format event batches on a ZMQ PUB socket, keeping the last
// batches for a ROUTER replay socket.
//
// Wire (the same as vLLM's ZmqEventPublisher): each batch is one multipart message
//   [topic, seq (8-byte big-endian), payload (EncodeKvEventBatch)]
// with seq counting 0, 1, 2, ... per publisher. The first batch a publisher sends starts with
// AllBlocksCleared: a subscriber that sees it (or a sequence that went back) drops what it
// knew of this pool and rebuilds from the events that follow (a new leader re-learns every
// object from its nodes and announces each as BlockStored).
// Replay: a DEALER/REQ peer sends [start (8-byte big-endian)] or [start, end] (16 bytes, end
// inclusive, a kvpool extension); the answer is one message [seq, payload] per batch still
// buffered in the range, then [-1, ""] (end). When part of the range is gone it first sends
// [-2, "<reason>"]: vLLM's subscribers skip negative sequence numbers other than the end.
//
// A slow or dead subscriber never makes the master wait: PUB and ROUTER drop at their
// high-water mark (10,000 batches per peer) instead of waiting, and the queue in front of the
// thread is bounded (dropped events are counted in /metrics). Each subscriber still costs the
// ZMQ I/O thread one send per batch (CPU; docs/benchmarks.md, "KV events cost").
//
// Threading: Start and Stop from one thread (the Master's owner); queue() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kvpool/status.h"
#include "master/kv_events.h"

namespace kvpool::master {

class KvEventPublisher {
 public:
  explicit KvEventPublisher(KvEventOptions options);
  ~KvEventPublisher();  // Stop()s
  KvEventPublisher(const KvEventPublisher&) = delete;
  KvEventPublisher& operator=(const KvEventPublisher&) = delete;

  // Binds both sockets and starts the thread. Errors: INVALID_PARAMS naming the endpoint that
  // could not be bound (taken, malformed); nothing is left running then.
  Status Start();
  // Publishes what is queued (for at most ~1 s), then closes the sockets and joins the thread.
  // Idempotent; safe without Start().
  void Stop();

  // Where the master records events. Valid for the publisher's lifetime.
  KvEventQueue* queue() { return &queue_; }

  // Counters for /metrics (Prometheus text). Thread-safe.
  std::string RenderMetrics() const;
  uint64_t next_seq() const { return next_seq_.load(std::memory_order_relaxed); }

 private:
  struct Sockets;
  struct Sent {
    uint64_t seq;
    std::string payload;
  };
  void Loop();
  // Publishes `events` as batches, one per run of events with the same topic.
  void Publish(std::vector<KvEvent>& events);
  void SendBatch(std::string_view topic_suffix, std::span<const KvEvent> events);
  void ServeReplay();

  const KvEventOptions options_;
  KvEventQueue queue_;
  std::unique_ptr<Sockets> sockets_;  // used by the thread only once it runs
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  bool cleared_sent_ = false;  // thread only: the first batch carries AllBlocksCleared
  std::deque<Sent> replay_;    // thread only
  std::atomic<uint64_t> next_seq_{0};
  std::atomic<uint64_t> events_published_{0};
  std::atomic<uint64_t> replay_requests_{0};
  std::atomic<uint64_t> replay_gone_{0};
};

}  // namespace kvpool::master
