#include "master/kv_event_publisher.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <zmq.hpp>

#include "common/metrics.h"

namespace kvpool::master {

struct KvEventPublisher::Sockets {
  zmq::context_t ctx{1};
  zmq::socket_t pub{ctx, zmq::socket_type::pub};
  zmq::socket_t replay;  // unbound unless options.replay_endpoint
};

namespace {

// How long the thread waits for a replay request before it looks at the queue again: the
// latency an event can add on an idle master.
constexpr std::chrono::milliseconds kPollInterval{10};
constexpr size_t kMaxEventsPerDrain = 4096;
// Batches queued per subscriber (ZMQ's send high-water mark). ZMQ shares a batch's bytes
// between subscribers, so a stuck one holds at most this many references (~64 B each).
constexpr int kSubscriberQueue = 10000;
// What a peer may send either socket (a subscription topic, a replay request of 8 or 16 bytes):
// ZMQ drops a peer whose message is larger, so nobody can make the master buffer more.
constexpr int64_t kMaxInboundMessage = 4096;
// Parts of one replay request kept ([identity, delimiter, request]); more are read and dropped.
constexpr size_t kMaxRequestFrames = 3;
constexpr int64_t kEndSeq = -1;
constexpr int64_t kGoneSeq = -2;

std::string BigEndian(int64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xff);
    v = static_cast<int64_t>(static_cast<uint64_t>(v) >> 8);
  }
  return out;
}

uint64_t FromBigEndian(std::string_view b) {
  uint64_t v = 0;
  for (char c : b) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

KvEventPublisher::KvEventPublisher(KvEventOptions options)
    : options_(std::move(options)), queue_(options_.queue_capacity) {}

KvEventPublisher::~KvEventPublisher() { Stop(); }

Status KvEventPublisher::Start() {
  auto s = std::make_unique<Sockets>();
  std::string_view which = "--kv_events_endpoint";
  std::string_view endpoint = options_.endpoint;
  try {
    // Linger 0: a closed socket drops what a dead subscriber did not take, so Stop never waits
    // on one. The high-water marks bound what a slow one costs in memory: a subscriber more
    // than kSubscriberQueue batches behind loses batches (a gap in seq; it asks for a replay).
    s->pub.set(zmq::sockopt::linger, 0);
    s->pub.set(zmq::sockopt::sndhwm, kSubscriberQueue);
    s->pub.set(zmq::sockopt::maxmsgsize, kMaxInboundMessage);
    s->pub.bind(options_.endpoint);
    if (!options_.replay_endpoint.empty()) {
      which = "--kv_events_replay_endpoint";
      endpoint = options_.replay_endpoint;
      s->replay = zmq::socket_t(s->ctx, zmq::socket_type::router);
      s->replay.set(zmq::sockopt::linger, 0);
      s->replay.set(zmq::sockopt::sndhwm, kSubscriberQueue);
      s->replay.set(zmq::sockopt::maxmsgsize, kMaxInboundMessage);
      s->replay.bind(options_.replay_endpoint);
    }
  } catch (const zmq::error_t& e) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("cannot bind {} {}: {} (a ZMQ endpoint such as tcp://*:5557 that "
                              "no other process holds)",
                              which, endpoint, e.what()));
  }
  sockets_ = std::move(s);
  stopping_.store(false);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void KvEventPublisher::Stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  sockets_.reset();  // closes the sockets, then the context
}

void KvEventPublisher::Loop() {
  std::vector<KvEvent> events;
  auto flush_deadline = std::chrono::steady_clock::time_point::max();
  for (;;) {
    if (stopping_.load() && flush_deadline == std::chrono::steady_clock::time_point::max()) {
      flush_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    zmq::pollitem_t items[] = {{sockets_->replay.handle(), 0, ZMQ_POLLIN, 0}};
    const bool has_replay = sockets_->replay.handle() != nullptr;
    try {
      if (has_replay) {
        zmq::poll(items, 1, kPollInterval);
        if ((items[0].revents & ZMQ_POLLIN) != 0) ServeReplay();
      } else {
        std::this_thread::sleep_for(kPollInterval);
      }
      events.clear();
      while (queue_.Drain(&events, kMaxEventsPerDrain) > 0) {
        Publish(events);
        events.clear();
        if (std::chrono::steady_clock::now() > flush_deadline) break;
      }
    } catch (const zmq::error_t& e) {
      // Sends never block (dontwait) and drop at the high-water mark; anything else is a
      // broken socket: log it (rarely) and go on, the master must not stop for it.
      spdlog::warn("kv events publisher: {}", e.what());
    }
    if (stopping_.load()) return;
  }
}

void KvEventPublisher::Publish(std::vector<KvEvent>& events) {
  if (!cleared_sent_) {
    cleared_sent_ = true;
    events.insert(events.begin(),
                  KvEvent{KvEventKind::kCleared, KvMedium::kDram, KvRemoval::kNone, std::string()});
  }
  std::span<const KvEvent> all(events);
  for (size_t i = 0; i < all.size();) {
    std::string_view suffix = KvEventTopicSuffix(all[i].why);
    size_t j = i + 1;
    while (j < all.size() && KvEventTopicSuffix(all[j].why) == suffix) ++j;
    SendBatch(suffix, all.subspan(i, j - i));
    i = j;
  }
}

void KvEventPublisher::SendBatch(std::string_view topic_suffix, std::span<const KvEvent> events) {
  std::string payload = EncodeKvEventBatch(UnixSeconds(), events, options_.block_size);
  const uint64_t seq = next_seq_.load(std::memory_order_relaxed);
  const std::string topic = options_.topic + std::string(topic_suffix);
  const std::string seq_bytes = BigEndian(static_cast<int64_t>(seq));
  auto& pub = sockets_->pub;
  pub.send(zmq::buffer(topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  pub.send(zmq::buffer(seq_bytes), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
  next_seq_.store(seq + 1, std::memory_order_relaxed);
  events_published_.fetch_add(events.size(), std::memory_order_relaxed);
  if (options_.replay_batches > 0) {
    if (replay_.size() >= options_.replay_batches) replay_.pop_front();
    replay_.push_back(Sent{seq, std::move(payload)});
  }
}

void KvEventPublisher::ServeReplay() {
  auto& sock = sockets_->replay;
  std::vector<zmq::message_t> frames;
  bool too_many = false;
  for (;;) {
    zmq::message_t m;
    if (!sock.recv(m, zmq::recv_flags::dontwait)) return;  // nothing more waiting
    const bool more = m.more();
    if (frames.size() < kMaxRequestFrames) {
      frames.push_back(std::move(m));
    } else {
      too_many = true;
    }
    if (!more) break;
  }
  replay_requests_.fetch_add(1, std::memory_order_relaxed);
  // ROUTER: [identity, (empty delimiter from REQ), request]. Answers go to identity with the
  // same delimiter, so REQ and DEALER peers both read [seq, payload].
  const std::string identity = frames.front().to_string();
  const bool delimited = frames.size() == 3 && frames[1].empty();
  const std::string_view request = frames.back().to_string_view();
  auto reply = [&](int64_t seq, std::string_view payload) {
    sock.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    if (delimited)
      sock.send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    sock.send(zmq::buffer(BigEndian(seq)), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    sock.send(zmq::buffer(payload), zmq::send_flags::dontwait);
  };
  if (too_many || frames.size() < 2 || (request.size() != 8 && request.size() != 16)) {
    replay_gone_.fetch_add(1, std::memory_order_relaxed);
    reply(kGoneSeq, fmt::format("bad replay request: want the first sequence number as 8 "
                                "big-endian bytes (or first and last, 16 bytes); got {} bytes",
                                request.size()));
    reply(kEndSeq, "");
    return;
  }
  const uint64_t first = FromBigEndian(request.substr(0, 8));
  const uint64_t last = request.size() == 16 ? FromBigEndian(request.substr(8, 8)) : UINT64_MAX;
  const uint64_t oldest = replay_.empty() ? next_seq_.load() : replay_.front().seq;
  if (first < oldest) {
    replay_gone_.fetch_add(1, std::memory_order_relaxed);
    reply(kGoneSeq,
          fmt::format("sequence numbers {}..{} are gone: this publisher keeps batches {}..{} "
                      "(--kv_events_replay_buffer={}); resync from the live stream",
                      first, oldest - 1, oldest, next_seq_.load() - 1, options_.replay_batches));
  }
  for (const Sent& s : replay_) {
    if (s.seq >= first && s.seq <= last) reply(static_cast<int64_t>(s.seq), s.payload);
  }
  reply(kEndSeq, "");
}

std::string KvEventPublisher::RenderMetrics() const {
  metrics::TextWriter w;
  w.WriteCounter("kvpool_master_kv_events_published_total",
                 "KV events published on --kv_events_endpoint.",
                 events_published_.load(std::memory_order_relaxed));
  w.WriteCounter("kvpool_master_kv_events_dropped_total",
                 "KV events dropped because the publisher's queue was full "
                 "(--kv_events_queue_size).",
                 queue_.dropped());
  w.WriteCounter("kvpool_master_kv_event_batches_total",
                 "KV event batches published (the next batch's sequence number).",
                 next_seq_.load(std::memory_order_relaxed));
  w.WriteCounter("kvpool_master_kv_events_replay_requests_total",
                 "Replay requests served on --kv_events_replay_endpoint.",
                 replay_requests_.load(std::memory_order_relaxed));
  w.WriteCounter("kvpool_master_kv_events_replay_gone_total",
                 "Replay requests for batches no longer buffered (or malformed).",
                 replay_gone_.load(std::memory_order_relaxed));
  return w.Take();
}

}  // namespace kvpool::master
