// The per-thread workers of the put / get / exists / prefix rows (see row_runner.h), and the
// registered page memory they move bytes from and to.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kvpool/client.h"
#include "tools/bench/row_runner.h"

namespace kvpool::tools::bench {

// `pages` page-aligned pages of `page_bytes`, touched, registered with `client` by Register()
// and unregistered and freed by the destructor. With `host_allocator` the memory comes from
// kvpool's HostMemAllocator (shared memory a standalone client's node can map), else from the
// heap. One thread at a time.
class RegisteredPages {
 public:
  RegisteredPages(Client* client, uint64_t page_bytes, size_t pages, bool host_allocator);
  ~RegisteredPages();
  RegisteredPages(const RegisteredPages&) = delete;
  RegisteredPages& operator=(const RegisteredPages&) = delete;

  // Allocates, touches and registers. Errors: NO_AVAILABLE_HANDLE (out of memory), or the
  // client's RegisterBuffer error.
  Status Register();
  uint8_t* page(size_t i) const { return base_ + i * page_bytes_; }
  // Fills the first `count` pages (every page by default) with 0xA5 so a get that writes
  // nothing is caught. A check poisons only the pages its get reads: poisoning all of them
  // cost the demo's engines about as much CPU as their gets' own copies (docs/benchmarks.md).
  void Poison(size_t count = SIZE_MAX);

 private:
  Client* client_;
  uint64_t page_bytes_;
  size_t pages_;
  bool host_allocator_;
  uint8_t* base_ = nullptr;
  bool registered_ = false;
};

// Where a worker's keys live: "<ctx.key_prefix>/<workload>/p<page>/b<batch>/t<thread>/".
std::string WorkerKeyBase(const RowContext& ctx, const char* workload, uint64_t page, int batch,
                          int thread);
// Removes keys (force: they may hold read leases) in chunks; evicted keys are no error.
void RemoveKeys(Client* client, const std::vector<std::string>& keys);

// Writes pages of 4 MiB through `client` until `bytes` are written or `max_seconds` passed,
// or a stop request, then removes them: the pool's segment memory is touched once before anything
// is measured (a fresh segment's first write otherwise pays the page faults). Returns the bytes
// written.
Result<uint64_t> WarmUp(Client* client, bool host_allocator, const ReplicateConfig& replicate,
                        const std::string& key_base, uint64_t bytes, double max_seconds,
                        std::stop_token stop);

// Put: every call stores `batch` fresh keys of `page` bytes; Finish reads the last batch back
// and checks it byte-exact, then removes every key it put.
std::unique_ptr<RowWorker> MakePutWorker(const RowContext& ctx, uint64_t page, int batch,
                                         int thread);
// Get: Prepare stores `keys` keys (a multiple of `batch`); every call reads the next `batch` of
// them, every --verify_every'th call into poisoned pages checked byte-exact.
std::unique_ptr<RowWorker> MakeGetWorker(const RowContext& ctx, uint64_t page, int batch,
                                         int thread, size_t keys);
// Exists (prefix = false: BatchIsExist; true: ExistsPrefix): Prepare stores 1024+ small keys
// and checks that absent keys are reported absent; every call asks about `batch` present keys
// and checks every answer.
std::unique_ptr<RowWorker> MakeExistsWorker(const RowContext& ctx, int batch, int thread,
                                            bool prefix);

}  // namespace kvpool::tools::bench
