// The put and get workers, and the registered page memory they use.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/first_touch.h"
#include "kvpool/host_allocator.h"
#include "tools/bench/payload.h"
#include "tools/bench/stats.h"
#include "tools/bench/workers.h"

namespace kvpool::tools::bench {
namespace {

// The payload identity of a worker's key number `n`.
uint64_t KeyId(int thread, uint64_t n) { return (static_cast<uint64_t>(thread) << 40) | n; }

// Checks a batch get: every key OK, `page` bytes, and (when `check`) byte-exact.
Status CheckGot(const std::vector<Result<uint64_t>>& got, const std::vector<std::string>& keys,
                const std::vector<uint64_t>& ids, const RegisteredPages& pages,
                const PagePattern& pattern, bool check, ThreadTally& tally) {
  for (size_t j = 0; j < keys.size(); ++j) {
    if (!got[j].ok()) {
      return Status(got[j].code(),
                    fmt::format("get key={} failed: {}", keys[j], got[j].status().ToString()));
    }
    if (*got[j] != pattern.page_bytes()) {
      return Status(ErrorCode::INTERNAL_ERROR,
                    fmt::format("WRONG SIZE: get key={} returned {} bytes, {} were put", keys[j],
                                *got[j], pattern.page_bytes()));
    }
    if (!check) continue;
    if (auto bad = pattern.FirstMismatch(pages.page(j), ids[j])) {
      return Status(ErrorCode::INTERNAL_ERROR,
                    fmt::format("WRONG BYTES: get key={} differs from what was put at byte {}",
                                keys[j], *bad));
    }
    ++tally.verified;
  }
  return Status::Ok();
}

class PutWorker : public RowWorker {
 public:
  PutWorker(const RowContext& ctx, uint64_t page, int batch, int thread)
      : ctx_(ctx),
        thread_(thread),
        base_(WorkerKeyBase(ctx, "put", page, batch, thread)),
        pages_(ctx.client, page, batch, ctx.host_memory),
        pattern_(page, Mix64(base_.size() + thread)),
        keys_(batch),
        ids_(batch),
        ptrs_(batch),
        sizes_(batch, page) {}

  Status Prepare() override {
    KVPOOL_RETURN_IF_ERROR(pages_.Register());
    for (size_t j = 0; j < ptrs_.size(); ++j) ptrs_[j] = pages_.page(j);
    return Status::Ok();
  }

  Status Step(ThreadTally& tally) override {
    const double side0 = ThreadCpuSeconds();
    for (size_t j = 0; j < keys_.size(); ++j) {
      ids_[j] = KeyId(thread_, next_++);
      keys_[j] = base_ + std::to_string(ids_[j]);
      pattern_.Fill(pages_.page(j), ids_[j]);
      all_keys_.push_back(keys_[j]);
    }
    tally.side_cpu_s += ThreadCpuSeconds() - side0;
    const auto t0 = BenchClock::now();
    std::vector<Status> st = ctx_.client->BatchPutFrom(keys_, ptrs_, sizes_, ctx_.replicate);
    const int64_t ns = NanosSince(t0);
    for (size_t j = 0; j < st.size(); ++j) {
      if (!st[j].ok()) {
        return Status(st[j].code(),
                      fmt::format("put key={} failed: {}", keys_[j], st[j].ToString()));
      }
    }
    tally.Call(ns, keys_.size(), keys_.size() * pattern_.page_bytes());
    return Status::Ok();
  }

  Status Finish(ThreadTally& tally) override {
    Status st = Status::Ok();
    if (!all_keys_.empty()) {  // the last batch must read back exactly as put
      pages_.Poison();
      std::vector<void*> dst(ptrs_.size());
      for (size_t j = 0; j < dst.size(); ++j) dst[j] = pages_.page(j);
      auto got = ctx_.client->BatchGetInto(keys_, dst, sizes_);
      st = CheckGot(got, keys_, ids_, pages_, pattern_, true, tally);
    }
    RemoveKeys(ctx_.client, all_keys_);
    return st;
  }

 private:
  const RowContext& ctx_;
  const int thread_;
  const std::string base_;
  RegisteredPages pages_;
  PagePattern pattern_;
  uint64_t next_ = 0;
  std::vector<std::string> keys_;
  std::vector<uint64_t> ids_;
  std::vector<const void*> ptrs_;
  std::vector<size_t> sizes_;
  std::vector<std::string> all_keys_;
};

class GetWorker : public RowWorker {
 public:
  GetWorker(const RowContext& ctx, uint64_t page, int batch, int thread, size_t keys)
      : ctx_(ctx),
        thread_(thread),
        batch_(batch),
        base_(WorkerKeyBase(ctx, "get", page, batch, thread)),
        pages_(ctx.client, page, batch, ctx.host_memory),
        pattern_(page, Mix64(base_.size() * 31 + thread)),
        n_keys_(keys),
        ptrs_(batch),
        sizes_(batch, page) {}

  Status Prepare() override {
    KVPOOL_RETURN_IF_ERROR(pages_.Register());
    for (size_t j = 0; j < ptrs_.size(); ++j) ptrs_[j] = pages_.page(j);
    for (size_t s = 0; s * batch_ < n_keys_; ++s) {
      slice_keys_.emplace_back();
      slice_ids_.emplace_back();
      for (size_t j = 0; j < batch_; ++j) {
        slice_ids_[s].push_back(KeyId(thread_, s * batch_ + j));
        slice_keys_[s].push_back(base_ + std::to_string(slice_ids_[s].back()));
      }
    }
    return Populate();
  }

  Status Step(ThreadTally& tally) override {
    const size_t s = tally.calls % slice_keys_.size();
    const bool check = tally.calls % ctx_.options->verify_every == 0;
    if (check) {
      const double side0 = ThreadCpuSeconds();
      pages_.Poison();
      tally.side_cpu_s += ThreadCpuSeconds() - side0;
    }
    const auto t0 = BenchClock::now();
    auto got = ctx_.client->BatchGetInto(slice_keys_[s], ptrs_, sizes_);
    const int64_t ns = NanosSince(t0);
    const double side0 = ThreadCpuSeconds();
    Status st = CheckGot(got, slice_keys_[s], slice_ids_[s], pages_, pattern_, check, tally);
    if (check) tally.side_cpu_s += ThreadCpuSeconds() - side0;
    KVPOOL_RETURN_IF_ERROR(st);
    tally.Call(ns, batch_, batch_ * pattern_.page_bytes());
    return Status::Ok();
  }

  Status Finish(ThreadTally& /*tally*/) override {
    std::vector<std::string> all;
    for (const auto& keys : slice_keys_) all.insert(all.end(), keys.begin(), keys.end());
    RemoveKeys(ctx_.client, all);
    return Status::Ok();
  }

 private:
  // Puts every key, in calls of up to 64 MiB / 256 keys whatever the row's batch (untimed).
  Status Populate() {
    const uint64_t page = pattern_.page_bytes();
    const size_t chunk = std::clamp<uint64_t>((64ULL << 20) / page, 1, 256);
    RegisteredPages staging(ctx_.client, page, chunk, ctx_.host_memory);
    KVPOOL_RETURN_IF_ERROR(staging.Register());
    std::vector<std::string> keys;
    std::vector<uint64_t> ids;
    for (size_t s = 0; s < slice_keys_.size(); ++s) {
      keys.insert(keys.end(), slice_keys_[s].begin(), slice_keys_[s].end());
      ids.insert(ids.end(), slice_ids_[s].begin(), slice_ids_[s].end());
    }
    for (size_t from = 0; from < keys.size(); from += chunk) {
      const size_t n = std::min(chunk, keys.size() - from);
      std::vector<std::string> part(keys.begin() + from, keys.begin() + from + n);
      std::vector<const void*> src(n);
      for (size_t j = 0; j < n; ++j) {
        pattern_.Fill(staging.page(j), ids[from + j]);
        src[j] = staging.page(j);
      }
      auto st = ctx_.client->BatchPutFrom(part, src, std::vector<size_t>(n, page), ctx_.replicate);
      for (size_t j = 0; j < n; ++j) {
        if (!st[j].ok()) {
          return Status(st[j].code(), fmt::format("populating the get row: put key={} failed: {}",
                                                  part[j], st[j].ToString()));
        }
      }
    }
    return Status::Ok();
  }

  const RowContext& ctx_;
  const int thread_;
  const size_t batch_;
  const std::string base_;
  RegisteredPages pages_;
  PagePattern pattern_;
  const size_t n_keys_;
  std::vector<void*> ptrs_;
  std::vector<size_t> sizes_;
  std::vector<std::vector<std::string>> slice_keys_;
  std::vector<std::vector<uint64_t>> slice_ids_;
};

}  // namespace

RegisteredPages::RegisteredPages(Client* client, uint64_t page_bytes, size_t pages,
                                 bool host_allocator)
    : client_(client), page_bytes_(page_bytes), pages_(pages), host_allocator_(host_allocator) {}

RegisteredPages::~RegisteredPages() {
  if (registered_) (void)client_->UnregisterBuffer(base_);
  if (base_ == nullptr) return;
  if (host_allocator_) {
    (void)HostMemAllocator().Free(base_);
  } else {
    std::free(base_);
  }
}

Status RegisteredPages::Register() {
  const size_t bytes = (page_bytes_ * pages_ + 4095) / 4096 * 4096;
  if (host_allocator_) {
    auto p = HostMemAllocator().Alloc(bytes);
    if (!p.ok()) return p.status();
    base_ = static_cast<uint8_t*>(*p);
  } else {
    base_ = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
  }
  if (base_ == nullptr) {
    return Status(ErrorCode::NO_AVAILABLE_HANDLE,
                  fmt::format("cannot allocate {} bytes of client buffers", bytes));
  }
  // An engine's registered buffers live as long as it does: the kernel's first touches of them
  // (sends read them, receives write them; common/first_touch.h) are no row's to pay.
  (void)ZeroByKernel(base_, bytes);
  Poison();
  KVPOOL_RETURN_IF_ERROR(client_->RegisterBuffer(base_, page_bytes_ * pages_));
  registered_ = true;
  return Status::Ok();
}

void RegisteredPages::Poison(size_t count) {
  std::memset(base_, 0xA5, page_bytes_ * std::min(count, pages_));
}

std::string WorkerKeyBase(const RowContext& ctx, const char* workload, uint64_t page, int batch,
                          int thread) {
  return fmt::format("{}/{}/p{}/b{}/t{}/", ctx.key_prefix, workload, page, batch, thread);
}

void RemoveKeys(Client* client, const std::vector<std::string>& keys) {
  constexpr size_t kChunk = 1024;
  for (size_t i = 0; i < keys.size(); i += kChunk) {
    std::vector<std::string> chunk(keys.begin() + i,
                                   keys.begin() + std::min(keys.size(), i + kChunk));
    (void)client->BatchRemove(chunk, /*force=*/true);
  }
}

Result<uint64_t> WarmUp(Client* client, bool host_allocator, const ReplicateConfig& replicate,
                        const std::string& key_base, uint64_t bytes, double max_seconds,
                        std::stop_token stop) {
  constexpr uint64_t kPage = 4ULL << 20;
  const size_t kBatch = std::clamp<uint64_t>(bytes / kPage, 0, 16);
  if (kBatch == 0) return uint64_t{0};
  RegisteredPages pages(client, kPage, kBatch, host_allocator);
  KVPOOL_RETURN_IF_ERROR(pages.Register());
  std::vector<const void*> src(kBatch);
  for (size_t j = 0; j < kBatch; ++j) src[j] = pages.page(j);
  std::vector<std::string> all;
  uint64_t written = 0;
  const auto t0 = BenchClock::now();
  Status failed = Status::Ok();
  while (written + kBatch * kPage <= bytes && SecondsSince(t0) < max_seconds && failed.ok() &&
         !stop.stop_requested()) {
    std::vector<std::string> keys;
    for (size_t j = 0; j < kBatch; ++j) keys.push_back(key_base + std::to_string(all.size() + j));
    auto st = client->BatchPutFrom(keys, src, std::vector<size_t>(kBatch, kPage), replicate);
    for (const auto& s : st) {
      if (!s.ok() && failed.ok()) failed = s;
    }
    all.insert(all.end(), keys.begin(), keys.end());
    written += kBatch * kPage;
  }
  RemoveKeys(client, all);
  if (!failed.ok()) return Status(failed.code(), "warm-up put failed: " + failed.message());
  return written;
}

std::unique_ptr<RowWorker> MakePutWorker(const RowContext& ctx, uint64_t page, int batch,
                                         int thread) {
  return std::make_unique<PutWorker>(ctx, page, batch, thread);
}

std::unique_ptr<RowWorker> MakeGetWorker(const RowContext& ctx, uint64_t page, int batch,
                                         int thread, size_t keys) {
  return std::make_unique<GetWorker>(ctx, page, batch, thread, keys);
}

}  // namespace kvpool::tools::bench
