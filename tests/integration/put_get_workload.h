// A client thread that puts batches of fresh keys and reads earlier ones back until stopped,
// recording when each put completed, the longest call, and any wrong bytes returned. Shared by
// the master-restart and the HA soak tests (each kills masters under it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "kvpool/client.h"
#include "test_bytes.h"

namespace kvpool::testing {

struct PutGetWorkloadOptions {
  std::string key_prefix;                            // keys are key_prefix + a counter
  size_t value_bytes = 4 << 10;                      // ObjectBytes(key, 0, value_bytes)
  size_t batch = 4;                                  // keys per put
  std::chrono::milliseconds pause_after_put{5};      // between rounds
  std::chrono::milliseconds pause_after_failure{5};  // after a round whose first put failed
};

class PutGetWorkload {
 public:
  using SteadyClock = std::chrono::steady_clock;
  struct Done {
    std::string key;
    SteadyClock::time_point at;
  };

  // `client` must outlive the workload.
  PutGetWorkload(Client* client, PutGetWorkloadOptions options)
      : client_(client), options_(std::move(options)) {}
  ~PutGetWorkload() {
    if (thread_.joinable()) Stop();  // a failed ASSERT left it running
  }
  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    stop_ = true;
    thread_.join();
  }
  // The bytes the workload puts under `key`.
  std::vector<uint8_t> ValueOf(const std::string& key) const {
    return ObjectBytes(key, 0, options_.value_bytes);
  }
  std::vector<Done> completed() {
    std::lock_guard lock(mu_);
    return completed_;
  }
  SteadyClock::duration longest_call() const { return longest_.load(); }
  SteadyClock::duration longest_put() const { return longest_put_.load(); }
  SteadyClock::duration longest_get() const { return longest_get_.load(); }
  size_t rounds() const { return rounds_.load(); }
  size_t wrong_bytes() const { return wrong_.load(); }
  size_t failed_calls() const { return failed_.load(); }

 private:
  static void Raise(std::atomic<SteadyClock::duration>& longest, SteadyClock::duration took) {
    auto prev = longest.load();
    while (took > prev && !longest.compare_exchange_weak(prev, took)) {
    }
  }
  void Note(SteadyClock::time_point start, std::atomic<SteadyClock::duration>& of_kind) {
    auto took = SteadyClock::now() - start;
    Raise(longest_, took);
    Raise(of_kind, took);
  }
  void Run() {
    size_t next = 0;
    std::mt19937 rng(7);
    while (!stop_) {
      std::vector<std::string> keys;
      std::vector<std::vector<uint8_t>> values;
      std::vector<std::span<const uint8_t>> spans;
      for (size_t i = 0; i < options_.batch; ++i) {
        keys.push_back(options_.key_prefix + std::to_string(next++));
        values.push_back(ValueOf(keys.back()));
      }
      for (auto& v : values) spans.emplace_back(v.data(), v.size());
      auto start = SteadyClock::now();
      auto st = client_->BatchPut(keys, spans, ReplicateConfig{});
      Note(start, longest_put_);
      std::vector<std::string> back;  // a few earlier objects: any bytes returned must be right
      {
        std::lock_guard lock(mu_);
        const auto now = SteadyClock::now();
        for (size_t i = 0; i < keys.size(); ++i) {
          if (st[i].ok()) {
            completed_.push_back({keys[i], now});
          } else {
            ++failed_;
          }
        }
        for (size_t i = 0; i < 4 && !completed_.empty(); ++i) {
          back.push_back(completed_[rng() % completed_.size()].key);
        }
      }
      start = SteadyClock::now();
      auto got = client_->BatchGet(back);
      Note(start, longest_get_);
      for (size_t i = 0; i < back.size(); ++i) {
        if (got[i].ok() && *got[i] != ValueOf(back[i])) ++wrong_;
        if (!got[i].ok()) ++failed_;
      }
      ++rounds_;
      std::this_thread::sleep_for(st.empty() || st[0].ok() ? options_.pause_after_put
                                                           : options_.pause_after_failure);
    }
  }

  Client* const client_;
  const PutGetWorkloadOptions options_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Done> completed_;  // guarded by mu_
  std::atomic<SteadyClock::duration> longest_{SteadyClock::duration::zero()};
  std::atomic<SteadyClock::duration> longest_put_{SteadyClock::duration::zero()};
  std::atomic<SteadyClock::duration> longest_get_{SteadyClock::duration::zero()};
  std::atomic<size_t> rounds_{0};
  std::atomic<size_t> wrong_{0};
  std::atomic<size_t> failed_{0};
};

}  // namespace kvpool::testing
