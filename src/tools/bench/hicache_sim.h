// The simulated world of the hicache workload: conversations as page-hash chains, handed out to
// engines one turn at a time, and each engine's own host-memory cache (L2) of pages.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/bench/bench_options.h"

namespace kvpool::tools::bench {

// The key of a page: 64 hex characters (like SGLang's SHA-256 page hashes) under `prefix`.
std::string PageKey(const std::string& prefix, uint64_t page_hash);

struct Conversation {
  uint64_t uid = 0;
  int turns_left = 0;
  std::vector<uint64_t> chain;  // page hashes from the first system-prompt page on
  bool busy = false;            // an engine is serving a turn of it
};

// All live conversations. Thread-safe: Acquire / Release lock a mutex; between them the
// acquiring engine alone touches the conversation.
class ConversationTable {
 public:
  ConversationTable(const HicacheOptions& o, uint64_t seed);

  // A conversation no other engine is serving, chosen at random. REQUIRES: fewer engines than
  // conversations hold one at a time (checked by ValidateBenchOptions).
  Conversation* Acquire(std::mt19937_64& rng);
  // Ends a turn: when the conversation's turns are over it is replaced by a fresh one (new uid,
  // random system prompt). Then another engine may take it.
  void Release(Conversation* c, std::mt19937_64& rng);
  // Appends a turn's `n` new pages to the chain. REQUIRES: the caller acquired `c`.
  static void Extend(Conversation& c, int n);

 private:
  void Reset(Conversation& c, std::mt19937_64& rng);  // REQUIRES: mu_ held

  const HicacheOptions options_;
  std::vector<std::vector<uint64_t>> prompts_;  // system-prompt chains
  std::mutex mu_;
  std::vector<Conversation> conversations_;  // fixed size; busy and contents guarded by mu_
  uint64_t next_uid_ = 1;                    // guarded by mu_
};

// An engine's host-memory cache of pages (metadata only): least recently used out first.
// One thread.
class PageLru {
 public:
  explicit PageLru(size_t capacity) : capacity_(capacity) {}
  bool Contains(uint64_t page_hash) const { return index_.count(page_hash) != 0; }
  void Touch(uint64_t page_hash);  // inserts or refreshes; evicts the oldest past capacity

 private:
  size_t capacity_;
  std::list<uint64_t> order_;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> index_;
};

}  // namespace kvpool::tools::bench
