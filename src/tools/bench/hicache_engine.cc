#include "tools/bench/hicache_engine.h"

#include <fmt/format.h>

#include "client/client_security.h"
#include "tools/bench/stats.h"

namespace kvpool::tools::bench {

Engine::Engine(int index, const HicacheContext& ctx, ConversationTable& table,
               const PagePattern& pattern, HicacheCounters& counters)
    : index_(index),
      ctx_(ctx),
      table_(table),
      pattern_(pattern),
      counters_(counters),
      rng_(Mix64(0xe491 + index)),
      l2_(ctx.options->hicache.l2_pages) {}

Status Engine::Setup() {
  const BenchOptions& o = *ctx_.options;
  Result<std::unique_ptr<Client>> c = Status(ErrorCode::INVALID_PARAMS, "no local node");
  if (ctx_.mode == Mode::kStandalone && !ctx_.local_nodes.empty()) {
    StandaloneOptions so;
    so.server_address = ctx_.local_nodes[index_ % ctx_.local_nodes.size()];
    c = Client::SetupStandalone(so);
  } else if (ctx_.mode != Mode::kStandalone) {
    ClientOptions co;
    co.master_server_address = ctx_.master_address;
    if (ctx_.mode == Mode::kEmbedded) co.global_segment_size = o.segment_bytes / o.hicache.engines;
    client::ApplySecurityFlags(o.security, co);
    c = Client::Setup(co);
  }
  if (!c.ok()) return c.status();
  client_ = std::move(c).value();
  pages_ = std::make_unique<RegisteredPages>(client_.get(), pattern_.page_bytes(), kMaxBatch,
                                             ctx_.mode == Mode::kStandalone);
  return pages_->Register();
}

std::vector<std::string> Engine::Keys(const std::vector<uint64_t>& chain, size_t from, size_t n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (size_t i = from; i < from + n; ++i) keys.push_back(PageKey(ctx_.key_prefix, chain[i]));
  return keys;
}

Result<size_t> Engine::ReadPages(const std::vector<uint64_t>& chain, size_t from, size_t count) {
  const uint64_t page = pattern_.page_bytes();
  std::vector<void*> ptrs(kMaxBatch);
  for (size_t j = 0; j < kMaxBatch; ++j) ptrs[j] = pages_->page(j);
  size_t done = 0;
  while (done < count) {
    const size_t n = std::min(kMaxBatch, count - done);
    const double side0 = ThreadCpuSeconds();
    std::vector<std::string> keys = Keys(chain, from + done, n);
    const bool check = tallies_.get.calls % ctx_.options->verify_every == 0;
    if (check) pages_->Poison(n);
    tallies_.get.side_cpu_s += ThreadCpuSeconds() - side0;
    std::vector<void*> dst(ptrs.begin(), ptrs.begin() + n);
    const auto t0 = BenchClock::now();
    auto got = client_->BatchGetInto(keys, dst, std::vector<size_t>(n, page));
    tallies_.get.Call(NanosSince(t0), n, n * page);
    const double side1 = ThreadCpuSeconds();
    for (size_t j = 0; j < n; ++j) {
      if (!got[j].ok() && got[j].code() == ErrorCode::OBJECT_NOT_FOUND) {
        counters_.lost_races.fetch_add(count - done - j, std::memory_order_relaxed);
        return done + j;  // evicted since the exists: the rest is recomputed
      }
      if (!got[j].ok()) {
        return Status(got[j].code(), fmt::format("engine {}: get key={} failed: {}", index_,
                                                 keys[j], got[j].status().ToString()));
      }
      if (*got[j] != page) {
        return Status(ErrorCode::INTERNAL_ERROR,
                      fmt::format("WRONG SIZE: engine {}: key={} is {} bytes, pages are {}", index_,
                                  keys[j], *got[j], page));
      }
      if (!check) continue;
      if (auto bad = pattern_.FirstMismatch(pages_->page(j), chain[from + done + j])) {
        return Status(ErrorCode::INTERNAL_ERROR,
                      fmt::format("WRONG BYTES: engine {}: key={} differs from what was put "
                                  "at byte {}",
                                  index_, keys[j], *bad));
      }
      ++tallies_.get.verified;
    }
    if (check) tallies_.get.side_cpu_s += ThreadCpuSeconds() - side1;
    counters_.bytes_read.fetch_add(n * page, std::memory_order_relaxed);
    done += n;
  }
  return done;
}

Status Engine::WritePages(const std::vector<uint64_t>& chain, size_t from) {
  const uint64_t page = pattern_.page_bytes();
  for (size_t done = from; done < chain.size();) {
    const size_t n = std::min(kMaxBatch, chain.size() - done);
    const double side0 = ThreadCpuSeconds();
    std::vector<std::string> keys = Keys(chain, done, n);
    std::vector<const void*> src(n);
    for (size_t j = 0; j < n; ++j) {
      pattern_.Fill(pages_->page(j), chain[done + j]);  // "computing" the page
      src[j] = pages_->page(j);
    }
    tallies_.put.side_cpu_s += ThreadCpuSeconds() - side0;
    const auto t0 = BenchClock::now();
    auto st = client_->BatchPutFrom(keys, src, std::vector<size_t>(n, page));
    tallies_.put.Call(NanosSince(t0), n, n * page);
    for (size_t j = 0; j < n; ++j) {
      if (st[j].code() == ErrorCode::NO_AVAILABLE_HANDLE) {
        // Like HiCache: a write-through the full pool refuses is dropped, not fatal.
        counters_.dropped.fetch_add(1, std::memory_order_relaxed);
      } else if (!st[j].ok()) {
        return Status(st[j].code(), fmt::format("engine {}: put key={} failed: {}", index_, keys[j],
                                                st[j].ToString()));
      } else {
        written_.push_back(keys[j]);
      }
    }
    counters_.bytes_written.fetch_add(n * page, std::memory_order_relaxed);
    done += n;
  }
  return Status::Ok();
}

Status Engine::RunTurn() {
  const auto turn0 = BenchClock::now();
  Conversation* c = table_.Acquire(rng_);
  if (c == nullptr) return Status(ErrorCode::INTERNAL_ERROR, "no free conversation");
  const size_t prefix = c->chain.size();
  const int new_pages = std::uniform_int_distribution<int>(2, 5)(rng_);
  ConversationTable::Extend(*c, new_pages);
  const std::vector<uint64_t>& chain = c->chain;
  size_t l2 = 0;
  while (l2 < prefix && l2_.Contains(chain[l2])) ++l2;
  size_t l3 = 0;
  Status st = Status::Ok();
  if (l2 < prefix) {
    std::vector<std::string> keys = Keys(chain, l2, prefix - l2);
    const auto t0 = BenchClock::now();
    auto hit = client_->ExistsPrefix(keys);
    tallies_.exists.Call(NanosSince(t0), keys.size(), 0);
    if (!hit.ok()) st = hit.status();
    if (hit.ok() && *hit > 0) {
      auto got = ReadPages(chain, l2, *hit);
      if (got.ok()) l3 = *got;
      st = got.status();
    }
  }
  if (st.ok()) st = WritePages(chain, l2 + l3);
  for (uint64_t h : chain) l2_.Touch(h);
  tallies_.turn.Call(NanosSince(turn0), chain.size() - l2, 0);
  counters_.pages_asked.fetch_add(prefix, std::memory_order_relaxed);
  counters_.l2_hits.fetch_add(l2, std::memory_order_relaxed);
  counters_.l3_hits.fetch_add(l3, std::memory_order_relaxed);
  counters_.new_pages.fetch_add(new_pages, std::memory_order_relaxed);
  counters_.turns.fetch_add(1, std::memory_order_relaxed);
  table_.Release(c, rng_);
  return st;
}

void Engine::Cleanup() {
  if (!client_) return;
  RemoveKeys(client_.get(), written_);
  pages_.reset();
  (void)client_->Close();
}

}  // namespace kvpool::tools::bench
