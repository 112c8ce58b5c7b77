// The public Client calls, written once for both modes: each vector form builds one
// ObjectBatch, Put and Get validate it once, and the mode's operations (the private virtual
// functions) do the rest.
#include "kvpool/client.h"

#include <fmt/format.h>

#include "client/shared/batch_check.h"

namespace kvpool {
namespace {

Status Closed() { return Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, "client is closed"); }

// INVALID_PARAMS naming the lengths when the parallel lists of a vector form disagree.
Status CheckLengths(size_t keys, size_t ptrs, size_t sizes) {
  if (ptrs == keys && sizes == keys) return Status::Ok();
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("batch of {} keys came with {} buffer lists and {} size lists", keys,
                            ptrs, sizes));
}

// Object i: key i in the buffer ptrs[i] of sizes[i] bytes. REQUIRES: CheckLengths passed.
template <typename Ptr>
ObjectBatch OneBufferEach(const std::vector<std::string>& keys, const std::vector<Ptr>& ptrs,
                          const std::vector<size_t>& sizes) {
  ObjectBatch batch;
  batch.Reserve(keys.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) batch.Add(keys[i], ptrs[i], sizes[i]);
  return batch;
}

// Object i: key i in the buffers ptrs[i] of sizes[i]; an object whose two lists differ in
// length gets no buffers and INVALID_PARAMS in `pre`. REQUIRES: CheckLengths passed.
template <typename Ptr>
ObjectBatch BuffersEach(const std::vector<std::string>& keys,
                        const std::vector<std::vector<Ptr>>& ptrs,
                        const std::vector<std::vector<size_t>>& sizes, std::vector<Status>& pre) {
  ObjectBatch batch;
  size_t buffers = 0;
  for (const auto& p : ptrs) buffers += p.size();
  batch.Reserve(keys.size(), buffers);
  pre.assign(keys.size(), Status::Ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    batch.AddObject(keys[i]);
    if (ptrs[i].size() != sizes[i].size()) {
      pre[i] = Status(
          ErrorCode::INVALID_PARAMS,
          fmt::format("key={}: {} buffers but {} sizes", keys[i], ptrs[i].size(), sizes[i].size()));
      continue;
    }
    for (size_t j = 0; j < ptrs[i].size(); ++j) batch.AddBuffer(ptrs[i][j], sizes[i][j]);
  }
  return batch;
}

template <typename R>
std::vector<R> Every(size_t n, const Status& st) {
  return std::vector<R>(n, R(st));
}

}  // namespace

Status Client::CheckOpen() const { return closed_.load() ? Closed() : Status::Ok(); }

Status Client::RegisterBuffer(void* ptr, size_t size) {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  return RegisterMemory(ptr, size);
}

Status Client::UnregisterBuffer(void* ptr) {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  return UnregisterMemory(ptr);
}

std::vector<Status> Client::RunPut(const ObjectBatch& batch, const ReplicateConfig& config,
                                   bool upsert, bool registered, std::vector<Status> results) {
  Status whole = CheckOpen();
  if (whole.ok()) whole = client::CheckPlacement(config, batch.size());
  if (!whole.ok()) return Every<Status>(batch.size(), whole);
  client::CheckPutObjects(batch, results);
  PutObjects(batch, config, upsert, registered, results);
  return results;
}

std::vector<Result<uint64_t>> Client::RunGet(const ObjectBatch& batch,
                                             std::vector<Result<uint64_t>> results) {
  if (Status st = CheckOpen(); !st.ok()) return Every<Result<uint64_t>>(batch.size(), st);
  client::CheckGetKeys(batch.keys(), results);
  GetObjects(batch, results);
  return results;
}

std::vector<Status> Client::Put(const ObjectBatch& batch, const ReplicateConfig& config,
                                bool upsert) {
  return RunPut(batch, config, upsert, /*registered=*/true, std::vector<Status>(batch.size()));
}

std::vector<Result<uint64_t>> Client::Get(const ObjectBatch& batch) {
  return RunGet(batch, std::vector<Result<uint64_t>>(batch.size(), uint64_t{0}));
}

Status Client::PutFrom(const std::string& key, const void* ptr, size_t size,
                       const ReplicateConfig& config) {
  ObjectBatch batch;
  batch.Add(key, ptr, size);
  return Put(batch, config)[0];
}

Result<uint64_t> Client::GetInto(const std::string& key, void* ptr, size_t size) {
  ObjectBatch batch;
  batch.Add(key, ptr, size);
  return Get(batch)[0];
}

std::vector<Status> Client::BatchPutFrom(const std::vector<std::string>& keys,
                                         const std::vector<const void*>& ptrs,
                                         const std::vector<size_t>& sizes,
                                         const ReplicateConfig& config) {
  if (Status st = CheckLengths(keys.size(), ptrs.size(), sizes.size()); !st.ok()) {
    return Every<Status>(keys.size(), st);
  }
  return Put(OneBufferEach(keys, ptrs, sizes), config);
}

std::vector<Status> Client::BatchUpsertFrom(const std::vector<std::string>& keys,
                                            const std::vector<const void*>& ptrs,
                                            const std::vector<size_t>& sizes,
                                            const ReplicateConfig& config) {
  if (Status st = CheckLengths(keys.size(), ptrs.size(), sizes.size()); !st.ok()) {
    return Every<Status>(keys.size(), st);
  }
  return Put(OneBufferEach(keys, ptrs, sizes), config, /*upsert=*/true);
}

std::vector<Result<uint64_t>> Client::BatchGetInto(const std::vector<std::string>& keys,
                                                   const std::vector<void*>& ptrs,
                                                   const std::vector<size_t>& sizes) {
  if (Status st = CheckLengths(keys.size(), ptrs.size(), sizes.size()); !st.ok()) {
    return Every<Result<uint64_t>>(keys.size(), st);
  }
  return Get(OneBufferEach(keys, ptrs, sizes));
}

std::vector<Status> Client::BatchPutFromMultiBuffers(
    const std::vector<std::string>& keys, const std::vector<std::vector<const void*>>& ptrs,
    const std::vector<std::vector<size_t>>& sizes, const ReplicateConfig& config) {
  if (Status st = CheckLengths(keys.size(), ptrs.size(), sizes.size()); !st.ok()) {
    return Every<Status>(keys.size(), st);
  }
  std::vector<Status> pre;
  ObjectBatch batch = BuffersEach(keys, ptrs, sizes, pre);
  return RunPut(batch, config, /*upsert=*/false, /*registered=*/true, std::move(pre));
}

std::vector<Result<uint64_t>> Client::BatchGetIntoMultiBuffers(
    const std::vector<std::string>& keys, const std::vector<std::vector<void*>>& ptrs,
    const std::vector<std::vector<size_t>>& sizes) {
  if (Status st = CheckLengths(keys.size(), ptrs.size(), sizes.size()); !st.ok()) {
    return Every<Result<uint64_t>>(keys.size(), st);
  }
  std::vector<Status> pre;
  ObjectBatch batch = BuffersEach(keys, ptrs, sizes, pre);
  std::vector<Result<uint64_t>> results;
  results.reserve(keys.size());
  for (Status& st : pre) {
    results.push_back(st.ok() ? Result<uint64_t>(uint64_t{0}) : Result<uint64_t>(std::move(st)));
  }
  return RunGet(batch, std::move(results));
}

std::vector<Status> Client::BatchPut(const std::vector<std::string>& keys,
                                     const std::vector<std::span<const uint8_t>>& values,
                                     const ReplicateConfig& config) {
  if (values.size() != keys.size()) {
    return Every<Status>(keys.size(),
                         Status(ErrorCode::INVALID_PARAMS,
                                fmt::format("{} keys but {} values", keys.size(), values.size())));
  }
  ObjectBatch batch;
  batch.Reserve(keys.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) batch.Add(keys[i], values[i].data(), values[i].size());
  return RunPut(batch, config, /*upsert=*/false, /*registered=*/false,
                std::vector<Status>(keys.size()));
}

std::vector<Result<std::vector<uint8_t>>> Client::BatchGet(const std::vector<std::string>& keys) {
  if (Status st = CheckOpen(); !st.ok())
    return Every<Result<std::vector<uint8_t>>>(keys.size(), st);
  return GetCopies(keys);
}

Result<bool> Client::IsExist(const std::string& key) {
  const std::string_view one[] = {key};
  return BatchIsExist(std::span<const std::string_view>(one))[0];
}

std::vector<Result<bool>> Client::BatchIsExist(std::span<const std::string_view> keys) {
  if (Status st = CheckOpen(); !st.ok()) return Every<Result<bool>>(keys.size(), st);
  if (keys.empty()) return {};
  return ExistKeys(keys);
}

std::vector<Result<bool>> Client::BatchIsExist(const std::vector<std::string>& keys) {
  return BatchIsExist(std::vector<std::string_view>(keys.begin(), keys.end()));
}

Result<size_t> Client::ExistsPrefix(std::span<const std::string_view> keys) {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  return CountExistingPrefix(keys);
}

Result<size_t> Client::ExistsPrefix(const std::vector<std::string>& keys) {
  return ExistsPrefix(std::vector<std::string_view>(keys.begin(), keys.end()));
}

Result<uint64_t> Client::GetSize(const std::string& key) {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  return SizeOf(key);
}

Status Client::Remove(const std::string& key, bool force) { return BatchRemove({key}, force)[0]; }

std::vector<Status> Client::BatchRemove(const std::vector<std::string>& keys, bool force) {
  if (Status st = CheckOpen(); !st.ok()) return Every<Status>(keys.size(), st);
  if (keys.empty()) return {};
  return RemoveKeys(keys, force);
}

Result<uint64_t> Client::RemoveAll(bool force) {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  return RemoveEvery(force);
}

Result<Client::KeyScanPage> Client::ScanKeys(const std::string& prefix, const std::string& cursor,
                                             uint32_t limit) {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  return ScanPage(prefix, cursor, limit);
}

Result<PoolStat> Client::Stat() {
  KVPOOL_RETURN_IF_ERROR(CheckOpen());
  return PoolStats();
}

int Client::HealthCheck() { return closed_.load() ? 1 : Health(); }

Status Client::Close() {
  if (closed_.exchange(true)) return Status::Ok();
  Shutdown();
  return Status::Ok();
}

std::string Client::SegmentName() const { return closed_.load() ? std::string() : OwnSegment(); }

}  // namespace kvpool
