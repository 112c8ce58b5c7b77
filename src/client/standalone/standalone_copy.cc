// Standalone copying calls: values that are not in shared memory pass through the staging
// buffer (a HostMemAllocator allocation the node has mapped), one extra memcpy each way. Many
// small values share one round trip; a value larger than the whole buffer goes through a
// temporary shared allocation of its own size.
#include <fmt/format.h>

#include <cstring>

#include "client/standalone/key_chunked.h"
#include "client/shared/replicate_config_proto.h"
#include "client/standalone/standalone_client.h"
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

// Copies `buffers`, one after another, to `dest`.
void CopyInto(uint8_t* dest, std::span<const iovec> buffers) {
  for (const iovec& b : buffers) {
    if (b.iov_len > 0) std::memcpy(dest, b.iov_base, b.iov_len);
    dest += b.iov_len;
  }
}

}  // namespace

void StandaloneClient::PutCopies(const ObjectBatch& batch, const ReplicateConfig& config,
                                 std::vector<Status>& results) {
  std::lock_guard<std::mutex> lock(staging_mu_);
  size_t i = 0;
  while (i < batch.size()) {
    if (!results[i].ok()) {
      ++i;
      continue;
    }
    if (batch.bytes(i) > staging_size_) {
      results[i] = PutThroughTemporary(batch, i, ConfigForKeys(config, i, i + 1));
      ++i;
      continue;
    }
    // Pack as many of the next values as fit, then send them as one batch.
    rpc::LocalPut req;
    std::vector<size_t> sent;
    uint64_t used = 0;
    for (; i < batch.size(); ++i) {
      if (!results[i].ok()) continue;
      const uint64_t n = batch.bytes(i);
      const uint64_t at = AlignUp(used);
      if (n > staging_size_ || at > staging_size_ || n > staging_size_ - at) break;
      CopyInto(staging_ + at, batch.buffers(i));
      rpc::LocalObject* obj = req.add_objects();
      obj->set_key(batch.key(i));
      *obj->add_slices() = SliceOf(staging_region_, at, n);
      sent.push_back(i);
      used = at + n;
    }
    *req.mutable_config() = ToProto(ConfigForKeys(config, sent));
    SendPut(req, sent, results);
  }
}

std::vector<Result<std::vector<uint8_t>>> StandaloneClient::GetCopies(
    const std::vector<std::string>& keys) {
  if (auto chunks = KeyChunks(keys); chunks.size() > 1) {  // too big for one frame
    return ConcatChunks(chunks, [&](size_t b, size_t e) { return GetCopies(PartOf(keys, b, e)); });
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

Status StandaloneClient::PutThroughTemporary(const ObjectBatch& batch, size_t i,
                                             const ReplicateConfig& config) {
  const uint64_t size = batch.bytes(i);
  auto mem = allocator_.Alloc(size);
  if (!mem.ok()) return mem.status();
  CopyInto(static_cast<uint8_t*>(*mem), batch.buffers(i));
  Status st = Status::Ok();
  auto region = RegisterStagingRegion(*mem, size);
  if (!region.ok()) {
    st = region.status();
  } else {
    rpc::LocalPut req;
    *req.mutable_config() = ToProto(config);
    rpc::LocalObject* obj = req.add_objects();
    obj->set_key(batch.key(i));
    *obj->add_slices() = SliceOf(*region, 0, size);
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
