#include "tools/bench/hicache_sim.h"

#include <fmt/format.h>

#include "tools/bench/payload.h"

namespace kvpool::tools::bench {
namespace {

// The next key of a chain: hashes the previous key and this page's tokens.
uint64_t ChainNext(uint64_t prev, uint64_t tokens) { return Mix64(prev * 31 + Mix64(tokens)); }

}  // namespace

std::string PageKey(const std::string& prefix, uint64_t h) {
  return fmt::format("{}/{:016x}{:016x}{:016x}{:016x}", prefix, h, Mix64(h ^ 1), Mix64(h ^ 2),
                     Mix64(h ^ 3));
}

ConversationTable::ConversationTable(const HicacheOptions& o, uint64_t seed) : options_(o) {
  for (int p = 0; p < o.system_prompts; ++p) {
    std::vector<uint64_t> chain;
    uint64_t h = seed;
    for (int i = 0; i < o.system_prompt_pages; ++i) {
      h = ChainNext(h, (static_cast<uint64_t>(p) << 32) | static_cast<uint64_t>(i));
      chain.push_back(h);
    }
    prompts_.push_back(std::move(chain));
  }
  std::mt19937_64 rng(seed);
  conversations_.resize(o.conversations);
  for (auto& c : conversations_) Reset(c, rng);
}

void ConversationTable::Reset(Conversation& c, std::mt19937_64& rng) {
  c.uid = next_uid_++;
  c.turns_left = std::uniform_int_distribution<int>(4, options_.max_turns)(rng);
  c.chain = prompts_[rng() % prompts_.size()];
  // The first user message is part of the first turn's new pages (Extend appends them).
}

Conversation* ConversationTable::Acquire(std::mt19937_64& rng) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t start = rng() % conversations_.size();
  for (size_t i = 0; i < conversations_.size(); ++i) {
    Conversation& c = conversations_[(start + i) % conversations_.size()];
    if (!c.busy) {
      c.busy = true;
      return &c;
    }
  }
  return nullptr;  // unreachable while engines < conversations
}

void ConversationTable::Extend(Conversation& c, int n) {
  uint64_t h = c.chain.empty() ? c.uid : c.chain.back();
  for (int i = 0; i < n; ++i) {
    h = ChainNext(h, (c.uid << 20) + c.chain.size());
    c.chain.push_back(h);
  }
}

void ConversationTable::Release(Conversation* c, std::mt19937_64& rng) {
  std::lock_guard<std::mutex> lock(mu_);
  if (--c->turns_left <= 0) Reset(*c, rng);
  c->busy = false;
}

void PageLru::Touch(uint64_t page_hash) {
  if (capacity_ == 0) return;
  auto it = index_.find(page_hash);
  if (it != index_.end()) {
    order_.splice(order_.begin(), order_, it->second);
    return;
  }
  order_.push_front(page_hash);
  index_[page_hash] = order_.begin();
  if (order_.size() > capacity_) {
    index_.erase(order_.back());
    order_.pop_back();
  }
}

}  // namespace kvpool::tools::bench
