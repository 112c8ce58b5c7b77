// Standalone copying calls: values that are not in shared memory pass through the staging
// buffer (a HostMemAllocator allocation the node has mapped), one extra memcpy each way. Many
// small values share one round trip; a value larger than the whole buffer goes through a
// temporary shared allocation of its own size.
#include <fmt/format.h>

#include <cstring>

#include "client/key_chunked.h"
#include "client/replicate_config_proto.h"
#include "client/standalone_client.h"
#include "common/key_chunks.h"

namespace kvpool::client {
namespace {

constexpr uint64_t kAlign = 64;

uint64_t AlignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

rpc::Slice SliceOf(uint64_t region, uint64_t offset, uint64_t length) {
  rpc::Slice s;
  s.set_region_id(region);
  s.set_offset(offset);
  s.set_length(length);
  return s;
}

}  // namespace

std::vector<Status> StandaloneClient::BatchPut(const std::vector<std::string>& keys,
                                               const std::vector<std::span<const uint8_t>>& values,
                                               const ReplicateConfig& config) {
  Status whole = CheckOpen();
  if (whole.ok() && values.size() != keys.size()) {
    whole = Status(ErrorCode::INVALID_PARAMS,
                   fmt::format("{} keys but {} values", keys.size(), values.size()));
  }
  if (whole.ok() && config.replica_num == 0) {
    whole = Status(ErrorCode::INVALID_PARAMS, "replica_num must be at least 1");
  }
  if (whole.ok()) whole = CheckGroupIds(config, keys.size());
  if (!whole.ok()) return std::vector<Status>(keys.size(), whole);
  if (auto chunks = KeyChunks(keys); chunks.size() > 1) {  // too big for one frame
    return ConcatChunks(chunks, [&](size_t b, size_t e) {
      return BatchPut(PartOf(keys, b, e), PartOf(values, b, e), ConfigForKeys(config, b, e));
    });
  }
  std::vector<Status> out(keys.size());
  std::lock_guard<std::mutex> lock(staging_mu_);
  size_t i = 0;
  while (i < keys.size()) {
    if (values[i].size() > staging_size_) {
      out[i] = PutThroughTemporary(keys[i], values[i], ConfigForKeys(config, i, i + 1));
      ++i;
      continue;
    }
    // Pack as many of the next values as fit, then send them as one batch.
    rpc::LocalPut req;
    std::vector<size_t> sent;
    uint64_t used = 0;
    for (; i < keys.size(); ++i) {
      const uint64_t n = values[i].size();
      const uint64_t at = AlignUp(used);
      if (n > staging_size_ || at > staging_size_ || n > staging_size_ - at) break;
      if (n > 0) std::memcpy(staging_ + at, values[i].data(), n);
      rpc::LocalObject* obj = req.add_objects();
      obj->set_key(keys[i]);
      *obj->add_slices() = SliceOf(staging_region_, at, n);
      sent.push_back(i);
      used = at + n;
    }
    *req.mutable_config() = ToProto(ConfigForKeys(config, sent));
    SendPut(req, sent, out);
  }
  return out;
}

std::vector<Result<std::vector<uint8_t>>> StandaloneClient::BatchGet(
    const std::vector<std::string>& keys) {
  if (Status st = CheckOpen(); !st.ok()) {
    return std::vector<Result<std::vector<uint8_t>>>(keys.size(), st);
  }
  if (auto chunks = KeyChunks(keys); chunks.size() > 1) {  // too big for one frame
    return ConcatChunks(chunks, [&](size_t b, size_t e) { return BatchGet(PartOf(keys, b, e)); });
  }
  std::vector<Result<std::vector<uint8_t>>> out(keys.size(),
                                                Status(ErrorCode::INTERNAL_ERROR, "not staged"));
  std::vector<size_t> pending(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) pending[i] = i;
  std::lock_guard<std::mutex> lock(staging_mu_);
  // The node fills the buffer in key order, so each round settles at least its first key: at
  // most one round per key.
  for (size_t round = 0; !pending.empty() && round <= keys.size(); ++round) {
    rpc::LocalGet req;
    for (size_t i : pending) req.add_objects()->set_key(keys[i]);
    *req.mutable_pack() = SliceOf(staging_region_, 0, staging_size_);
    rpc::LocalGetReply reply;
    Status call = SendGet(req, &reply);
    std::vector<size_t> next;
    for (size_t k = 0; k < pending.size(); ++k) {
      const size_t i = pending[k];
      const int kk = static_cast<int>(k);
      if (!call.ok()) {
        out[i] = call;
      } else if (reply.deferred(kk)) {
        if (reply.sizes(kk) > staging_size_) {
          out[i] = GetThroughTemporary(keys[i], reply.sizes(kk));
        } else {
          next.push_back(i);
        }
      } else if (reply.codes(kk) != 0) {
        out[i] = Status(ErrorCodeFromInt(reply.codes(kk)), reply.messages(kk));
      } else if (reply.offsets(kk) > staging_size_ ||
                 reply.sizes(kk) > staging_size_ - reply.offsets(kk)) {
        out[i] = Status(ErrorCode::INTERNAL_ERROR, "node placed an object outside the buffer");
      } else {
        const uint8_t* p = staging_ + reply.offsets(kk);
        out[i] = std::vector<uint8_t>(p, p + reply.sizes(kk));
      }
    }
    pending = std::move(next);
  }
  return out;
}

Status StandaloneClient::PutThroughTemporary(const std::string& key, std::span<const uint8_t> value,
                                             const ReplicateConfig& config) {
  auto mem = allocator_.Alloc(value.size());
  if (!mem.ok()) return mem.status();
  std::memcpy(*mem, value.data(), value.size());
  Status st = Status::Ok();
  auto region = RegisterStagingRegion(*mem, value.size());
  if (!region.ok()) {
    st = region.status();
  } else {
    rpc::LocalPut req;
    *req.mutable_config() = ToProto(config);
    rpc::LocalObject* obj = req.add_objects();
    obj->set_key(key);
    *obj->add_slices() = SliceOf(*region, 0, value.size());
    std::vector<Status> one(1);
    SendPut(req, {0}, one);
    st = one[0];
    regions_.RemoveRegion(*region);
    UnregisterRegionAtNode(*region);
  }
  (void)allocator_.Free(*mem);
  return st;
}

Result<std::vector<uint8_t>> StandaloneClient::GetThroughTemporary(const std::string& key,
                                                                   uint64_t size) {
  auto mem = allocator_.Alloc(size);
  if (!mem.ok()) return mem.status();
  Result<std::vector<uint8_t>> out = Status(ErrorCode::INTERNAL_ERROR, "");
  auto region = RegisterStagingRegion(*mem, size);
  if (!region.ok()) {
    out = region.status();
  } else {
    rpc::LocalGet req;
    rpc::LocalObject* obj = req.add_objects();
    obj->set_key(key);
    *obj->add_slices() = SliceOf(*region, 0, size);
    rpc::LocalGetReply reply;
    Status call = SendGet(req, &reply);
    if (!call.ok()) {
      out = call;
    } else if (reply.codes(0) != 0) {
      out = Status(ErrorCodeFromInt(reply.codes(0)), reply.messages(0));
    } else {
      const uint8_t* p = static_cast<const uint8_t*>(*mem);
      out = std::vector<uint8_t>(p, p + reply.sizes(0));
    }
    regions_.RemoveRegion(*region);
    UnregisterRegionAtNode(*region);
  }
  (void)allocator_.Free(*mem);
  return out;
}

}  // namespace kvpool::client
