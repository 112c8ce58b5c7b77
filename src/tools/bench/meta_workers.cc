// The exists and prefix workers: metadata-only calls, every answer checked.
#include <fmt/format.h>

#include "tools/bench/stats.h"
#include "tools/bench/workers.h"

namespace kvpool::tools::bench {
namespace {

constexpr size_t kMinKeys = 1024;
constexpr uint64_t kValueBytes = 64;

class ExistsWorker : public RowWorker {
 public:
  ExistsWorker(const RowContext& ctx, int batch, int thread, bool prefix)
      : ctx_(ctx),
        batch_(batch),
        prefix_(prefix),
        base_(WorkerKeyBase(ctx, prefix ? "prefix" : "exists", 0, batch, thread)),
        value_(ctx.client, kValueBytes, 1, ctx.host_memory) {}

  Status Prepare() override {
    KVPOOL_RETURN_IF_ERROR(value_.Register());
    const size_t slices = (std::max(kMinKeys, batch_) + batch_ - 1) / batch_;
    for (size_t s = 0; s < slices; ++s) {
      std::vector<std::string> keys;
      for (size_t j = 0; j < batch_; ++j) keys.push_back(base_ + std::to_string(s * batch_ + j));
      std::vector<const void*> ptrs(batch_, value_.page(0));
      auto st = ctx_.client->BatchPutFrom(keys, ptrs, std::vector<size_t>(batch_, kValueBytes),
                                          ctx_.replicate);
      for (size_t j = 0; j < st.size(); ++j) {
        if (!st[j].ok()) {
          return Status(st[j].code(), fmt::format("populating the exists row: put key={}: {}",
                                                  keys[j], st[j].ToString()));
        }
      }
      slices_.push_back(std::move(keys));
    }
    return CheckAbsentKeys();
  }

  Status Step(ThreadTally& tally) override {
    const auto& keys = slices_[tally.calls % slices_.size()];
    const auto t0 = BenchClock::now();
    Status st = prefix_ ? AskPrefix(keys) : AskEach(keys);
    const int64_t ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(BenchClock::now() - t0).count();
    KVPOOL_RETURN_IF_ERROR(st);
    tally.Call(ns, keys.size(), 0);
    return Status::Ok();
  }

  Status Finish(ThreadTally& /*tally*/) override {
    std::vector<std::string> all;
    for (const auto& keys : slices_) all.insert(all.end(), keys.begin(), keys.end());
    RemoveKeys(ctx_.client, all);
    return Status::Ok();
  }

 private:
  // Keys never put must be reported absent (else every "true" below means nothing).
  Status CheckAbsentKeys() {
    std::vector<std::string> absent;
    for (size_t j = 0; j < batch_; ++j) absent.push_back(base_ + "absent/" + std::to_string(j));
    auto r = ctx_.client->BatchIsExist(absent);
    for (size_t j = 0; j < r.size(); ++j) {
      if (!r[j].ok()) return r[j].status();
      if (*r[j]) {
        return Status(ErrorCode::INTERNAL_ERROR,
                      fmt::format("WRONG ANSWER: key={} was never put but exists", absent[j]));
      }
    }
    auto p = ctx_.client->ExistsPrefix(absent);
    if (!p.ok()) return p.status();
    if (*p != 0) {
      return Status(ErrorCode::INTERNAL_ERROR,
                    fmt::format("WRONG ANSWER: ExistsPrefix of absent keys said {}", *p));
    }
    return Status::Ok();
  }

  Status AskEach(const std::vector<std::string>& keys) {
    auto r = ctx_.client->BatchIsExist(keys);
    for (size_t j = 0; j < r.size(); ++j) {
      if (!r[j].ok()) {
        return Status(r[j].code(),
                      fmt::format("exists key={}: {}", keys[j], r[j].status().ToString()));
      }
      if (!*r[j]) {
        return Status(ErrorCode::INTERNAL_ERROR,
                      fmt::format("WRONG ANSWER: key={} was put but is reported absent", keys[j]));
      }
    }
    return Status::Ok();
  }

  Status AskPrefix(const std::vector<std::string>& keys) {
    auto r = ctx_.client->ExistsPrefix(keys);
    if (!r.ok()) return r.status();
    if (*r != keys.size()) {
      return Status(
          ErrorCode::INTERNAL_ERROR,
          fmt::format("WRONG ANSWER: ExistsPrefix said {} of {} present keys", *r, keys.size()));
    }
    return Status::Ok();
  }

  const RowContext& ctx_;
  const size_t batch_;
  const bool prefix_;
  const std::string base_;
  RegisteredPages value_;
  std::vector<std::vector<std::string>> slices_;
};

}  // namespace

std::unique_ptr<RowWorker> MakeExistsWorker(const RowContext& ctx, int batch, int thread,
                                            bool prefix) {
  return std::make_unique<ExistsWorker>(ctx, batch, thread, prefix);
}

}  // namespace kvpool::tools::bench
