// A small Prometheus toolkit: lock-free counters and latency histograms cheap enough for hot
// paths (relaxed atomics, no locks, no allocation), and a writer for the text exposition format
// (version 0.0.4) that /metrics endpoints serve.
//
// Names follow Prometheus conventions: `kvpool_<role>_<what>_<unit>`, counters end in `_total`,
// sizes in `_bytes`, durations in `_seconds`.
//
// Threading: Counter and LatencyHistogram are thread-safe (concurrent updates and reads; a read
// racing updates sees some of them). TextWriter is not thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace kvpool::metrics {

class Counter {
 public:
  void Add(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// Upper bounds of LatencyHistogram's buckets, in nanoseconds (+Inf is implicit): 10 us .. 10 s,
// about three per decade. Control-plane calls take microseconds; the tail reaches seconds when a
// put runs an eviction round.
inline constexpr std::array<uint64_t, 18> kLatencyBoundsNs = {
    10'000,      25'000,      50'000,      100'000,       250'000,       500'000,
    1'000'000,   2'500'000,   5'000'000,   10'000'000,    25'000'000,    50'000'000,
    100'000'000, 250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000, 10'000'000'000};

class LatencyHistogram {
 public:
  static constexpr size_t kBuckets = kLatencyBoundsNs.size() + 1;  // the last one is +Inf

  struct Snapshot {
    std::array<uint64_t, kBuckets> counts{};  // per bucket, NOT cumulative
    uint64_t sum_ns = 0;
    uint64_t count() const;
  };

  void ObserveNanos(uint64_t ns);
  Snapshot Take() const;

 private:
  std::array<std::atomic<uint64_t>, kBuckets> counts_{};
  std::atomic<uint64_t> sum_ns_{0};
};

// Counts per error code, lock-free: the first kSlots distinct codes each claim a slot; codes past
// the last slot are counted in it as well (more distinct codes than that means a bug elsewhere).
class ErrorCounts {
 public:
  static constexpr size_t kSlots = 48;

  void Add(int32_t code);
  // Times `code` was added (0 when it never was).
  uint64_t Count(int32_t code) const;
  // fn(code, count) for each code seen, in the order codes were first seen.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Slot& slot : slots_) {
      int32_t code = slot.code.load(std::memory_order_relaxed);
      if (code == 0) break;  // slots are claimed in order
      fn(code, slot.count.value());
    }
  }

 private:
  struct Slot {
    std::atomic<int32_t> code{0};  // 0: unclaimed
    Counter count;
  };
  std::array<Slot, kSlots> slots_;
};

// One label: name and (unescaped) value.
using Label = std::pair<std::string_view, std::string_view>;
using Labels = std::initializer_list<Label>;

// Builds a text exposition. Call Family once per metric name (it writes # HELP and # TYPE), then
// its samples. Label values are escaped as the format requires (\\, \", \n).
class TextWriter {
 public:
  // `type`: "counter", "gauge" or "histogram".
  void Family(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, Labels labels, uint64_t value);
  void Sample(std::string_view name, Labels labels, double value);
  // Writes name_bucket{...,le="..."} (cumulative), name_sum (seconds) and name_count.
  void Histogram(std::string_view name, Labels labels, const LatencyHistogram::Snapshot& h);

  // Family + one unlabelled sample, for the many single-value metrics.
  void WriteCounter(std::string_view name, std::string_view help, uint64_t value);
  void WriteGauge(std::string_view name, std::string_view help, double value);

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Series(std::string_view name, std::string_view suffix, Labels labels, Label extra);

  std::string out_;
};

// "a\"b" for a"b: the escaping of label values.
std::string EscapeLabelValue(std::string_view v);

}  // namespace kvpool::metrics
