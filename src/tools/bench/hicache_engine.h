// One simulated inference engine of the hicache workload (see hicache_workload.h for the turn it
// serves). An Engine is used by one thread at a time: set up on the main thread, run on its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "kvpool/client.h"
#include "tools/bench/hicache_sim.h"
#include "tools/bench/hicache_workload.h"
#include "tools/bench/payload.h"
#include "tools/bench/row_runner.h"
#include "tools/bench/workers.h"

namespace kvpool::tools::bench {

// Totals of all engines, read live by the progress display (relaxed atomics).
struct HicacheCounters {
  std::atomic<uint64_t> turns{0};
  std::atomic<uint64_t> pages_asked{0};  // prefix pages of all turns
  std::atomic<uint64_t> l2_hits{0};      // found in the engine's own memory
  std::atomic<uint64_t> l3_hits{0};      // read from kvpool
  std::atomic<uint64_t> lost_races{0};   // reported by exists, evicted before the get
  std::atomic<uint64_t> new_pages{0};    // pages the turns added
  std::atomic<uint64_t> dropped{0};      // writes refused: pool full of leased objects
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> bytes_written{0};
};

// What one engine measured, per call type.
struct EngineTallies {
  ThreadTally exists, get, put, turn;
};

class Engine {
 public:
  Engine(int index, const HicacheContext& ctx, ConversationTable& table, const PagePattern& pattern,
         HicacheCounters& counters);

  // Sets up the engine's client (embedded: with its share of --segment_size; standalone:
  // attached to a local node, pages from HostMemAllocator) and registers its 128 host pages.
  // Errors: the client's.
  Status Setup();
  // Serves one turn of a conversation. Errors: a failed call, or WRONG BYTES.
  Status RunTurn();
  // Removes every key this engine wrote (untimed) and closes the client.
  void Cleanup();
  EngineTallies& tallies() { return tallies_; }

 private:
  static constexpr size_t kMaxBatch = 128;  // HiCache moves up to 128 pages per call

  // Reads chain[from, from+count) in batches; returns how many leading pages arrived.
  Result<size_t> ReadPages(const std::vector<uint64_t>& chain, size_t from, size_t count);
  // Computes and writes chain[from, end) in batches.
  Status WritePages(const std::vector<uint64_t>& chain, size_t from);
  std::vector<std::string> Keys(const std::vector<uint64_t>& chain, size_t from, size_t n);

  const int index_;
  const HicacheContext& ctx_;
  ConversationTable& table_;
  const PagePattern& pattern_;
  HicacheCounters& counters_;
  std::mt19937_64 rng_;
  PageLru l2_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<RegisteredPages> pages_;
  std::vector<std::string> written_;
  EngineTallies tallies_;
};

}  // namespace kvpool::tools::bench
