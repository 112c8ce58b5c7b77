#include "transfer/segment_memory.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/first_touch.h"
#include "common/random_id.h"
#include "common/units.h"

namespace kvpool::transfer {
namespace {

constexpr uint64_t kHugePage = 2ull << 20;

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Result<std::unique_ptr<SegmentMemory>> SegmentMemory::Map(uint64_t size,
                                                          SegmentMemoryOptions options) {
  if (size == 0) return Status(ErrorCode::INVALID_PARAMS, "segment size must be > 0");
  uint64_t page = options.huge_pages ? kHugePage : static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t mapped = RoundUp(size, page);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
  // Huge pages must be reserved up front: with MAP_NORESERVE a missing page would SIGBUS on
  // first touch instead of failing here.
  flags |= options.huge_pages ? MAP_HUGETLB : MAP_NORESERVE;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    std::string hint = options.huge_pages ? " (huge pages requested: reserve them with "
                                            "`sysctl vm.nr_hugepages=N` or drop --use_hugepage)"
                                          : "";
    return Status(
        ErrorCode::NO_AVAILABLE_HANDLE,
        fmt::format("cannot map a segment of {}: {}{}", FormatSize(size), strerror(err), hint));
  }
  if (!options.huge_pages && options.transparent_huge_pages) {
    ::madvise(p, mapped, MADV_HUGEPAGE);  // best effort
  }
  uint64_t incarnation = 0;
  while (incarnation == 0) incarnation = RandomU64();
  std::unique_ptr<SegmentMemory> memory(
      new SegmentMemory(static_cast<uint8_t*>(p), mapped, size, incarnation));
  if (options.prefault) {
    // Every core: nothing serves this memory yet, and start-up waits for it.
    memory->PrefaultBeforeReturn(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  } else if (options.prefault_in_background) {
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    for (unsigned i = 0; i < threads; ++i) {
      memory->prefaulters_.emplace_back([m = memory.get()] { m->PrefaultChunks(true); });
    }
  }
  return memory;
}

void SegmentMemory::PrefaultBeforeReturn(unsigned threads) {
  // Said first: on a VM a large segment can take seconds (docs/operations.md, --prefault).
  spdlog::info("faulting the segment's {} in before serving it, on {} threads", FormatSize(size_),
               threads);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> helpers;
  for (unsigned i = 1; i < threads; ++i) helpers.emplace_back([this] { PrefaultChunks(false); });
  PrefaultChunks(false);
  for (std::thread& t : helpers) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // What start-up paid, in the log: on a VM this is the host backing fresh memory.
  spdlog::info("segment of {} faulted in before serving: {:.2f} s on {} threads ({:.2f} GB/s)",
               FormatSize(size_), s, threads,
               static_cast<double>(prefaulted_bytes()) / 1e9 / std::max(s, 1e-9));
}

void SegmentMemory::PrefaultChunks(bool background) {
  // Below the serving threads: this is work ahead of need, and must not take a core from them.
  if (background) ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  // Small chunks: each holds the process's mmap lock for reading, and a writer of it (the node
  // mapping an attached engine's memory, malloc growing or trimming an arena) waits for the
  // chunk in hand, with the serving threads' next lock takers queued behind it. At the 0.3-1
  // GB/s a VM backs fresh memory with, 256 KiB is under a millisecond (2 MiB chunks slowed the
  // first batches into a fresh node: docs/benchmarks.md, round 15); it also bounds how long a
  // stop (the segment going away) waits.
  constexpr uint64_t kChunk = 256ull << 10;
  while (!stop_.load(std::memory_order_relaxed)) {
    const uint64_t off = next_chunk_.fetch_add(kChunk, std::memory_order_relaxed);
    if (off >= mapped_) return;
    const uint64_t n = std::min(kChunk, mapped_ - off);
    if (::madvise(base_ + off, n, MADV_POPULATE_WRITE) != 0) {
      // EINVAL before Linux 5.14, ENOMEM when the system is out of memory: pages then fault
      // in on first write as without a prefault. Before Map returns, the writes below fault
      // them in instead, as MAP_POPULATE would.
      const int err = errno;
      if (err != EINVAL || background) {
        // The first to fail says so; the others stop at their next chunk.
        if (next_chunk_.exchange(mapped_, std::memory_order_relaxed) < mapped_) {
          spdlog::info("segment prefault stopped at {} of {}: {}", FormatSize(off),
                       FormatSize(mapped_), strerror(err));
        }
        return;
      }
    }
    // The populate need not have the host back the pages, nor make them cheap to touch
    // (common/first_touch.h): on the VM of docs/benchmarks.md (round 23) the kernel's first
    // write of a page and user mode's each cost a hypervisor fault, 0.7 GB/s against 15 GB/s
    // after. A node's puts land by recv and its gets leave by send (the kernel's touches); a
    // standalone client's pages are copied in and out by the node (user mode's). Both are paid
    // here instead of by the first puts. They write zeros, so only while no writer can see the
    // memory; a background prefault leaves them to the writers.
    if (!background) {
      (void)ZeroByKernel(base_ + off, n);
      TouchPages(off, n);
    }
    prefaulted_.fetch_add(n, std::memory_order_relaxed);
  }
}

void SegmentMemory::TouchPages(uint64_t off, uint64_t n) {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (uint64_t p = 0; p < n; p += page) *reinterpret_cast<volatile uint8_t*>(base_ + off + p) = 0;
}

SegmentMemory::~SegmentMemory() {
  stop_.store(true, std::memory_order_relaxed);
  for (std::thread& t : prefaulters_) t.join();
  ::munmap(base_, mapped_);
}

}  // namespace kvpool::transfer
