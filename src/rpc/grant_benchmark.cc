// What data-plane grants cost (docs/security.md, "Data-plane grants"): the master signs one
// grant per replica location it hands a tenant; a segment host checks one per range a tenant
// sends. Privileged connections do neither.
//
// Per iteration: one Sign (BM_Sign) or one Check of a valid grant (BM_Check); BM_CheckRequest
// checks a 128-range DataRequest (one HiCache batch to one segment).
#include <benchmark/benchmark.h>

#include "rpc/grant.h"

namespace kvpool::rpc {
namespace {

constexpr uint64_t kNow = 1'800'000'000'000;
const std::string kSegment = "10.0.0.7:50052";
constexpr uint64_t kIncarnation = 0x5eed'0000'0000'0001;

void BM_Sign(benchmark::State& state) {
  GrantKey key("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  Grant g;
  uint64_t offset = 0;
  for (auto _ : state) {
    key.Sign(kSegment, kIncarnation, offset, 1 << 20, GrantMode::kRead, kNow + 15000, &g);
    offset += 1 << 20;
    benchmark::DoNotOptimize(g);
  }
}
BENCHMARK(BM_Sign);

void BM_Check(benchmark::State& state) {
  GrantKey key("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  Range r;
  r.set_offset(4096);
  r.set_length(1 << 20);
  key.Sign(kSegment, kIncarnation, 4096, 1 << 20, GrantMode::kRead, kNow + 15000,
           r.mutable_grant());
  for (auto _ : state) {
    Status st = key.Check(kSegment, kIncarnation, r, GrantMode::kRead, kNow);
    benchmark::DoNotOptimize(st);
  }
}
BENCHMARK(BM_Check);

void BM_CheckRequest(benchmark::State& state) {
  GrantKey key("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  DataRequest req;
  req.set_segment_name(kSegment);
  req.set_segment_incarnation(kIncarnation);
  for (uint64_t i = 0; i < 128; ++i) {
    Range* r = req.add_ranges();
    r->set_offset(i << 20);
    r->set_length(1 << 20);
    key.Sign(kSegment, kIncarnation, i << 20, 1 << 20, GrantMode::kWrite, kNow + 35000,
             r->mutable_grant());
  }
  for (auto _ : state) {
    Status st = key.CheckRequest(req, GrantMode::kWrite, kNow);
    benchmark::DoNotOptimize(st);
  }
}
BENCHMARK(BM_CheckRequest);

}  // namespace
}  // namespace kvpool::rpc

BENCHMARK_MAIN();
