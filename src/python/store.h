// KVPoolStore (alias MooncakeDistributedStore): the Mooncake Store method set over a
// kvpool::Client. Split by kind: store.cc (set-up, registration, zero-copy calls, queries,
// removal), store_copying.cc (calls that take or return bytes), store_bind.cc (the Python
// names, argument order and defaults).
//
// Return conventions (Mooncake's): 0, a byte count or a count on success; the negative error
// code on failure, with the message kept as kvpool.last_error(). Calls before setup or after
// close return UNAVAILABLE_IN_CURRENT_STATUS (-1010).
//
// Threading: any number of Python threads may call one store at once; every call that talks to
// the network releases the GIL. close() while other calls are in flight is safe: they finish on
// the client they started with, later calls see -1010.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kvpool/client.h"
#include "python/conversions.h"
#include "python/replicate_config.h"
#include "python/standalone.h"

namespace kvpool::python {

class Store {
 public:
  using Keys = std::vector<std::string>;
  using Addresses = std::vector<uintptr_t>;
  using Sizes = std::vector<uint64_t>;

  Store() = default;
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // --- set-up (store.cc) ---
  // Embedded mode from setup()'s keys (the client option table's names and aliases, and the
  // Python-layer keys in store.cc); setup(...)'s positional form passes its arguments here
  // under their names. Returns 0 or a negative code (the reason in last_error()).
  int Setup(const pybind11::dict& config);
  int SetupDummy(pybind11::handle mem_pool_size, pybind11::handle local_buffer_size,
                 const std::string& server_address, bool verify_checksum = false,
                 pybind11::handle rpc_timeout_ms = pybind11::none(),
                 pybind11::handle transfer_timeout_ms = pybind11::none());
  int Close();
  int HealthCheck();
  std::string GetHostname() const;
  bool IsStandalone() const;

  // --- zero-copy (store.cc); addresses must lie in registered regions ---
  int RegisterBuffer(uintptr_t ptr, uint64_t size);
  int UnregisterBuffer(uintptr_t ptr);
  int PutFrom(const std::string& key, uintptr_t ptr, uint64_t size, const PyReplicateConfig& cfg);
  int64_t GetInto(const std::string& key, uintptr_t ptr, uint64_t size);
  std::vector<int> BatchPutFrom(Keys keys, const Addresses& ptrs, const Sizes& sizes,
                                const PyReplicateConfig& cfg);
  std::vector<int64_t> BatchGetInto(Keys keys, const Addresses& ptrs, const Sizes& sizes);
  std::vector<int> BatchPutFromMultiBuffers(const Keys& keys, const std::vector<Addresses>& ptrs,
                                            const std::vector<Sizes>& sizes,
                                            const PyReplicateConfig& cfg);
  std::vector<int64_t> BatchGetIntoMultiBuffers(const Keys& keys,
                                                const std::vector<Addresses>& ptrs,
                                                const std::vector<Sizes>& sizes);
  int UpsertFrom(const std::string& key, uintptr_t ptr, uint64_t size,
                 const PyReplicateConfig& cfg);
  std::vector<int> BatchUpsertFrom(Keys keys, const Addresses& ptrs, const Sizes& sizes,
                                   const PyReplicateConfig& cfg);

  // --- copying (store_copying.cc); values are buffer-protocol objects ---
  int Put(const std::string& key, pybind11::handle value, const PyReplicateConfig& cfg);
  int PutParts(const std::string& key, const pybind11::args& parts, const PyReplicateConfig& cfg);
  int PutBatch(const Keys& keys, const pybind11::list& values, const PyReplicateConfig& cfg);
  pybind11::bytes Get(const std::string& key);
  pybind11::list GetBatch(const Keys& keys);
  pybind11::object GetBuffer(const std::string& key);
  // One BufferHandle (or None: miss, empty object, failure) per key, in one batch.
  pybind11::list BatchGetBuffer(const Keys& keys);
  int Upsert(const std::string& key, pybind11::handle value, const PyReplicateConfig& cfg);
  int UpsertBatch(const Keys& keys, const pybind11::list& values, const PyReplicateConfig& cfg);
  // kvpool extensions: per-key results; values[i] is a buffer or a list of buffers (gathered /
  // scattered in order). Work in every mode without registration (standalone: through the
  // node's staging buffer).
  std::vector<int> BatchPutFromBuffers(const Keys& keys, const pybind11::list& values,
                                       const PyReplicateConfig& cfg);
  std::vector<int64_t> BatchGetIntoBuffers(const Keys& keys, const pybind11::list& buffers);
  // kvpool: copying batch upsert with per-key results; values[i] is a buffer or a list of
  // buffers joined in order (straight into the staging memory: one copy).
  std::vector<int> BatchUpsertFromBuffers(const Keys& keys, const pybind11::list& values,
                                          const PyReplicateConfig& cfg);

  // --- queries and removal (store.cc) ---
  int IsExist(const std::string& key);
  std::vector<int> BatchIsExist(const KeyViews& keys);
  int64_t BatchExistsPrefix(const KeyViews& keys);
  int64_t GetSize(const std::string& key);
  int Remove(const std::string& key, bool force);
  std::vector<int> BatchRemove(const Keys& keys, bool force);
  // store_scan.cc: master-side scans of this client's tenant, page by page (Client::ScanKeys).
  // The count removed / the matching keys (at most max_keys, 0: no limit), or a negative code.
  int64_t RemoveByRegex(const std::string& pattern, bool force);
  pybind11::object ListKeys(const std::string& pattern, uint64_t max_keys, uint32_t page_size);
  int64_t RemoveAll(bool force);
  pybind11::dict Stat();
  uintptr_t AllocFromMemPool(pybind11::handle size);

 private:
  // The client, or UNAVAILABLE_IN_CURRENT_STATUS before setup / after close.
  Result<std::shared_ptr<Client>> client() const;
  // Installs a freshly set-up client; UNAVAILABLE_IN_CURRENT_STATUS if one is already there.
  int Install(Result<std::unique_ptr<Client>> setup, const std::string& hostname, bool standalone);
  // Copying upsert: stage `values` (per key, its parts in order) in memory the client accepts
  // for zero-copy calls.
  std::vector<Status> UpsertCopies(const Keys& keys,
                                   const std::vector<std::vector<std::span<const uint8_t>>>& values,
                                   const PyReplicateConfig& cfg);

  mutable std::mutex mu_;
  std::shared_ptr<Client> client_;  // guarded by mu_
  // True while the current set-up lasts; BufferHandles share it and refuse use after close().
  std::shared_ptr<std::atomic<bool>> session_;  // guarded by mu_
  std::shared_ptr<const std::atomic<bool>> session() const;
  std::string hostname_;     // guarded by mu_
  bool standalone_ = false;  // guarded by mu_
#if KVPOOL_PY_HAS_STANDALONE
  std::shared_ptr<HostMemAllocator> pool_allocator_;  // alloc_from_mem_pool; guarded by mu_
  std::vector<void*> pool_allocations_;               // freed at close; guarded by mu_
#endif
};

// What get_buffer() returns: an object's bytes, owned, exposed through the buffer protocol.
// The bytes live as long as the handle (and any memoryview of it); once the store that made it
// is closed, new views, ptr() and size() raise KVPoolError (UNAVAILABLE_IN_CURRENT_STATUS) as
// Mooncake's handles would dangle there. Views exported before close() stay valid.
struct BufferHandle {
  std::vector<uint8_t> bytes;
  std::shared_ptr<const std::atomic<bool>> open;
  // Raises KVPoolError when the store was closed.
  void CheckOpen() const;
};

void BindStore(pybind11::module_& m);

}  // namespace kvpool::python
