// Randomized sequences of the failures a pool lives through (bounded: 20 s of steps): nodes
// killed -9 and restarted at once on the same port, killed and restarted later, stopped past
// the client TTL and resumed, the master killed -9 and restarted, clients replaced. Between
// events a client puts fresh objects, upserts some, and reads back a sample with the default
// options (no checksum verification). Gets may fail; a get that succeeds must return exactly
// the bytes of a version that was put for that key (an older one than an acknowledged upsert's
// can come back after a master restart: counted as stale, see docs/failure-model.md).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "pool.h"

namespace kvpool::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct Stored {
  size_t size = 0;
  std::set<uint32_t> versions;  // the versions a successful get may return
};

class Sequence {
 public:
  Sequence(Pool& pool, uint32_t seed) : pool_(pool), rng_(seed) { NewClient(); }

  void NewClient() {
    client_.reset();
    ClientOptions o;
    o.rpc_timeout = milliseconds(1500);
    o.transfer_timeout = milliseconds(1500);
    client_ = pool_.NewClient(o);
    if (client_ != nullptr) {
      EXPECT_TRUE(client_->RegisterBuffer(upsert_buf_.data(), upsert_buf_.size()).ok());
    }
  }

  // One round of work: a batch of fresh puts, a few upserts, a sample of reads.
  void Work() {
    if (client_ == nullptr) return;
    constexpr size_t kBatch = 6;
    std::vector<std::string> keys;
    std::vector<std::vector<uint8_t>> values;
    for (size_t k = 0; k < kBatch; ++k) {
      keys.push_back("seq-" + std::to_string(next_key_++));
      size_t size = std::uniform_int_distribution<size_t>(4 << 10, 256 << 10)(rng_);
      values.push_back(ObjectBytes(keys.back(), 1, size));
    }
    std::vector<std::span<const uint8_t>> spans(values.begin(), values.end());
    auto put = client_->BatchPut(keys, spans, ReplicateConfig{});
    for (size_t k = 0; k < kBatch; ++k) {
      ++puts_;
      if (put[k].ok()) stored_[keys[k]] = Stored{values[k].size(), {1}};
    }
    if (stored_.empty()) return;
    Upsert();
    std::vector<std::string> want;
    for (int k = 0; k < 8; ++k) want.push_back(Pick());
    auto got = client_->BatchGet(want);
    for (size_t k = 0; k < want.size(); ++k) {
      if (stored_.count(want[k]) == 0) continue;  // erased as gone, sampled twice
      ++gets_;
      if (!got[k].ok()) {
        ++gets_failed_;
        // Gone for good (its node restarted with new memory): sample the living instead.
        if (got[k].code() == ErrorCode::OBJECT_NOT_FOUND) stored_.erase(want[k]);
        continue;
      }
      const Stored& s = stored_[want[k]];
      int version = 0;  // which version of this key the bytes are (0: none that was put)
      for (uint32_t v = 1; v <= *s.versions.rbegin() && version == 0; ++v) {
        if (*got[k] == ObjectBytes(want[k], v, s.size)) version = static_cast<int>(v);
      }
      if (version != 0 && s.versions.count(static_cast<uint32_t>(version)) > 0) {
        ++gets_exact_;
      } else if (version != 0) {
        // An older version that was put, intact: an acknowledged upsert rolled back by a
        // master restart (docs/failure-model.md). Counted, not wrong bytes.
        ++gets_stale_;
        std::printf("restart sequence: key=%s read version %d after an upsert, after %s\n",
                    want[k].c_str(), version, last_event_.c_str());
      } else {
        ++wrong_;
        ADD_FAILURE() << "wrong bytes for key=" << want[k] << " (" << got[k]->size() << " of "
                      << s.size << " bytes, no version that was put) after " << last_event_;
      }
    }
  }

  void Upsert() {
    const std::string key = Pick();
    Stored& s = stored_[key];
    const uint32_t v = *s.versions.rbegin() + 1;
    FillObject(key, v, upsert_buf_.data(), s.size);
    auto r = client_->BatchUpsertFrom({key}, {upsert_buf_.data()}, {s.size});
    if (r[0].ok()) {
      s.versions = {v};
    } else {
      s.versions.insert(v);  // it may or may not have landed
    }
  }

  std::string Pick() {
    auto it = stored_.begin();
    std::advance(it, std::uniform_int_distribution<size_t>(0, stored_.size() - 1)(rng_));
    return it->first;
  }

  // One random failure event.
  std::string Event() {
    last_event_ = EventOnce();
    return last_event_;
  }
  std::string EventOnce() {
    const size_t node = std::uniform_int_distribution<size_t>(0, pool_.node_count() - 1)(rng_);
    switch (std::uniform_int_distribution<int>(0, 5)(rng_)) {
      case 0:
      case 1:
        pool_.RestartNode(node);  // kill -9 and start again at once on the same port
        return "node restarted at once";
      case 2:
        pool_.KillNode(node);
        Settle(milliseconds(std::uniform_int_distribution<int>(100, 1500)(rng_)));
        pool_.RestartNode(node);
        return "node killed, restarted later";
      case 3: {
        pool_.node(node).Pause();
        Settle(milliseconds(std::uniform_int_distribution<int>(300, 2500)(rng_)));
        pool_.node(node).Resume();
        return "node stopped and resumed";
      }
      case 4:
        pool_.KillMaster();
        pool_.StartMaster();
        return "master restarted";
      default:
        NewClient();
        return "client replaced";
    }
  }

  // Work while time passes (a failure is in force meanwhile).
  void Settle(milliseconds d) {
    const auto until = Clock::now() + d;
    while (Clock::now() < until) Work();
  }

  Pool& pool_;
  std::mt19937 rng_;
  std::vector<uint8_t> upsert_buf_ = std::vector<uint8_t>(256 << 10);  // registered
  std::unique_ptr<Client> client_;
  std::map<std::string, Stored> stored_;
  uint64_t next_key_ = 0;
  std::string last_event_ = "no event yet";
  uint64_t puts_ = 0, gets_ = 0, gets_exact_ = 0, gets_stale_ = 0, gets_failed_ = 0, wrong_ = 0;
};

TEST(RestartSequenceTest, NoGetEverReturnsBytesThatWereNotPut) {
  constexpr auto kDuration = std::chrono::seconds(20);
  const uint32_t seed = static_cast<uint32_t>(std::random_device{}());
  std::printf("restart sequence: seed=%u\n", seed);
  RecordProperty("seed", std::to_string(seed));
  Pool pool({"--client_ttl", "2"});
  pool.AddNode("32MB");
  pool.AddNode("32MB");
  Sequence seq(pool, seed);
  std::map<std::string, int> events;
  const auto end = Clock::now() + kDuration;
  while (Clock::now() < end) {
    seq.Settle(milliseconds(std::uniform_int_distribution<int>(200, 1200)(seq.rng_)));
    ++events[seq.Event()];
  }
  seq.Settle(milliseconds(500));
  std::printf("restart sequence: puts=%lu gets=%lu exact=%lu stale=%lu failed=%lu wrong=%lu\n",
              static_cast<unsigned long>(seq.puts_), static_cast<unsigned long>(seq.gets_),
              static_cast<unsigned long>(seq.gets_exact_),
              static_cast<unsigned long>(seq.gets_stale_),
              static_cast<unsigned long>(seq.gets_failed_), static_cast<unsigned long>(seq.wrong_));
  for (const auto& [what, n] : events) std::printf("restart sequence: %s x%d\n", what.c_str(), n);
  EXPECT_EQ(seq.wrong_, 0u) << "seed=" << seed;
  EXPECT_GT(seq.gets_exact_, 0u);
}

}  // namespace
}  // namespace kvpool::testing
