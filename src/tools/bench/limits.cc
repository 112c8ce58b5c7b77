#include "tools/bench/limits.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <memory>
#include <set>

#include "common/first_touch.h"
#include "common/units.h"
#include "tools/bench/stats.h"

namespace kvpool::tools::bench {
namespace {

constexpr double kLimitSeconds = 0.5;     // per figure, capped by the row duration
constexpr int kTcpStreams[] = {1, 2, 4};  // the TCP limit is the best of these

// The page sizes each limit is needed for.
std::set<uint64_t> PagesNeeded(const BenchOptions& o) {
  std::set<uint64_t> pages;
  bool rows = o.Has(Workload::kPut) || o.Has(Workload::kGet);
  if (rows) pages.insert(o.page_list.begin(), o.page_list.end());
  if (o.Has(Workload::kHicache)) pages.insert(o.hicache.page_bytes);
  return pages;
}

bool HasMode(const BenchOptions& o, Mode m) {
  return std::find(o.mode_list.begin(), o.mode_list.end(), m) != o.mode_list.end();
}

// Page-aligned memory of `bytes` (a multiple of 8), touched by the kernel and by user mode
// (common/first_touch.h): a limit is the copy's or the wire's, not fresh memory's.
struct Region {
  explicit Region(uint64_t bytes)
      : data(static_cast<uint8_t*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096))),
        size(bytes) {
    if (data == nullptr) return;
    (void)ZeroByKernel(data.get(), size);
    std::memset(data.get(), 0x5a, size);
  }
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data;
  uint64_t size;
};

}  // namespace

const LimitFigure* Limits::For(Mode mode, uint64_t page_bytes) const {
  const auto& m = mode == Mode::kRemote ? tcp_by_page : memcpy_by_page;
  auto it = m.find(page_bytes);
  return it == m.end() ? nullptr : &it->second;
}

LimitFigure MeasureMemcpy(uint64_t page_bytes, std::span<uint8_t> src, std::span<uint8_t> dst,
                          double seconds) {
  const uint64_t src_pages = std::max<uint64_t>(1, src.size() / page_bytes);
  const uint64_t dst_pages = std::max<uint64_t>(1, dst.size() / page_bytes);
  uint64_t copies = 0;
  const double cpu0 = ThreadCpuSeconds();
  const auto t0 = BenchClock::now();
  double elapsed = 0;
  do {
    for (int i = 0; i < 8; ++i, ++copies) {
      std::memcpy(dst.data() + (copies % dst_pages) * page_bytes,
                  src.data() + (copies % src_pages) * page_bytes, page_bytes);
    }
    elapsed = SecondsSince(t0);
  } while (elapsed < seconds);
  const double gb = static_cast<double>(copies * page_bytes) / 1e9;
  return LimitFigure{gb / elapsed, (ThreadCpuSeconds() - cpu0) / gb};
}

Result<Limits> MeasureLimits(const BenchOptions& o, std::stop_token stop) {
  Limits limits;
  const std::set<uint64_t> pages = PagesNeeded(o);
  if (o.no_limits || pages.empty()) return limits;
  const double seconds = std::min(kLimitSeconds, o.RowSeconds());
  std::cout << fmt::format("Machine limits, measured now ({:.1f} s per figure):\n", seconds)
            << fmt::format("  {:>10}  {:>22}  {:>52}\n", "page", "memcpy, 1 thread",
                           "TCP loopback, best of 1/2/4 streams (each)");
  const uint64_t max_page = *pages.rbegin();
  const int max_batch = *std::max_element(o.batch_list.begin(), o.batch_list.end());
  std::unique_ptr<Region> src;
  if (HasMode(o, Mode::kEmbedded) || HasMode(o, Mode::kStandalone)) {
    // The source is as large as the get rows' working set.
    src = std::make_unique<Region>(std::max(o.working_set_bytes, max_page) / 8 * 8);
  }
  // The destination is as large as one batch of the largest page, capped by the working set:
  // memcpy cycles through all of it, each TCP page size through as much as one of its batches
  // fills.
  const uint64_t dst_bytes =
      std::min<uint64_t>(std::max(o.working_set_bytes, max_page), max_batch * max_page);
  auto dst = std::make_unique<Region>(dst_bytes);
  for (uint64_t page : pages) {
    if (stop.stop_requested()) break;
    std::string mem = "-", tcp = "-";
    const std::span<uint8_t> batch_dst(
        dst->data.get(), std::clamp<uint64_t>(max_batch * page, page, dst->size) / page * page);
    if (src != nullptr) {
      LimitFigure f =
          MeasureMemcpy(page, {src->data.get(), src->size}, {dst->data.get(), dst->size}, seconds);
      limits.memcpy_by_page[page] = f;
      mem = fmt::format("{:.2f} GB/s {:.2f} cpu-s/GB", f.gbps, f.cpu_s_per_gb);
    }
    if (HasMode(o, Mode::kRemote)) {
      LimitFigure best;
      std::string each;  // every stream count's figure, for the reader
      for (int streams : kTcpStreams) {
        auto f = MeasureTcp(page, batch_dst, streams, seconds);
        if (!f.ok()) return f.status();
        if (f->gbps > best.gbps) best = *f;
        each += fmt::format("{}{}: {:.2f}", each.empty() ? "" : ", ", streams, f->gbps);
      }
      limits.tcp_by_page[page] = best;
      tcp = fmt::format("{:.2f} GB/s {:.2f} cpu-s/GB ({})", best.gbps, best.cpu_s_per_gb, each);
    }
    std::cout << fmt::format("  {:>10}  {:>22}  {:>52}\n", FormatSize(page), mem, tcp);
  }
  std::cout << std::endl;
  return limits;
}

}  // namespace kvpool::tools::bench
