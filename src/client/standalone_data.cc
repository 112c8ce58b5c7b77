// Standalone zero-copy batches: the caller's buffers become (region, offset, length) slices and
// the node moves the bytes. Nothing but these names crosses the socket.
#include <fmt/format.h>

#include "client/batch_args.h"
#include "client/key_chunked.h"
#include "client/replicate_config_proto.h"
#include "client/standalone_client.h"
#include "common/key_chunks.h"

namespace kvpool::client {
namespace {

uint64_t ToNanos(Deadline d) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(d.time_since_epoch()).count());
}

// Checks the parallel vectors of a batch; INVALID_PARAMS for every key when they disagree.
template <typename Ptr>
Status CheckShape(const std::vector<std::string>& keys, const std::vector<std::vector<Ptr>>& ptrs,
                  const std::vector<std::vector<size_t>>& sizes) {
  if (ptrs.size() == keys.size() && sizes.size() == keys.size()) return Status::Ok();
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("batch of {} keys came with {} buffer lists and {} size lists",
                            keys.size(), ptrs.size(), sizes.size()));
}

// Translates object i's buffers into slices of `obj`. Errors as RegionTable::Translate.
template <typename Ptr>
Status AddSlices(const RegionTable& regions, const std::string& key, const std::vector<Ptr>& ptrs,
                 const std::vector<size_t>& sizes, rpc::LocalObject* obj) {
  if (ptrs.size() != sizes.size()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("key={}: {} buffers but {} sizes", key, ptrs.size(), sizes.size()));
  }
  obj->set_key(key);
  for (size_t j = 0; j < ptrs.size(); ++j) {
    auto slice = regions.Translate(ptrs[j], sizes[j], fmt::format("key={}", key));
    if (!slice.ok()) return slice.status();
    *obj->add_slices() = *slice;
  }
  return Status::Ok();
}

}  // namespace

void StandaloneClient::SendPut(rpc::LocalPut& req, const std::vector<size_t>& sent,
                               std::vector<Status>& out) {
  if (sent.empty()) return;
  const Deadline d = DataDeadline();
  req.set_deadline_ns(ToNanos(d));
  rpc::CodesReply reply;
  Status st = link_->Data(rpc::LOCAL_PUT, req, &reply, WaitDeadline(d));
  if (st.ok() && (reply.codes_size() != static_cast<int>(sent.size()) ||
                  reply.messages_size() != reply.codes_size())) {
    st = Status(ErrorCode::INTERNAL_ERROR, "node answered LOCAL_PUT for another batch");
  }
  for (size_t k = 0; k < sent.size(); ++k) {
    const int kk = static_cast<int>(k);
    if (!st.ok()) {
      out[sent[k]] = st;
    } else if (reply.codes(kk) != 0) {
      out[sent[k]] = Status(ErrorCodeFromInt(reply.codes(kk)), reply.messages(kk));
    }
  }
}

Status StandaloneClient::SendGet(rpc::LocalGet& req, rpc::LocalGetReply* reply) {
  const Deadline d = DataDeadline();
  req.set_deadline_ns(ToNanos(d));
  req.set_verify_checksum(options_.verify_checksum);
  KVPOOL_RETURN_IF_ERROR(link_->Data(rpc::LOCAL_GET, req, reply, WaitDeadline(d)));
  const int n = req.objects_size();
  if (reply->codes_size() != n || reply->messages_size() != n || reply->sizes_size() != n) {
    return Status(ErrorCode::INTERNAL_ERROR, "node answered LOCAL_GET for another batch");
  }
  if (req.has_pack() && (reply->offsets_size() != n || reply->deferred_size() != n)) {
    return Status(ErrorCode::INTERNAL_ERROR, "node answered a packed LOCAL_GET without offsets");
  }
  return Status::Ok();
}

std::vector<Status> StandaloneClient::PutSlices(const std::vector<std::string>& keys,
                                                const std::vector<std::vector<const void*>>& ptrs,
                                                const std::vector<std::vector<size_t>>& sizes,
                                                const ReplicateConfig& config, bool upsert) {
  Status whole = CheckOpen();
  if (whole.ok()) whole = CheckShape(keys, ptrs, sizes);
  if (whole.ok() && config.replica_num == 0) {
    whole = Status(ErrorCode::INVALID_PARAMS, "replica_num must be at least 1");
  }
  if (whole.ok()) whole = CheckGroupIds(config, keys.size());
  if (!whole.ok()) return std::vector<Status>(keys.size(), whole);
  if (auto chunks = KeyChunks(keys); chunks.size() > 1) {  // too big for one frame
    return ConcatChunks(chunks, [&](size_t b, size_t e) {
      return PutSlices(PartOf(keys, b, e), PartOf(ptrs, b, e), PartOf(sizes, b, e),
                       ConfigForKeys(config, b, e), upsert);
    });
  }
  std::vector<Status> out(keys.size());
  rpc::LocalPut req;
  req.set_upsert(upsert);
  std::vector<size_t> sent;
  for (size_t i = 0; i < keys.size(); ++i) {
    rpc::LocalObject obj;
    out[i] = AddSlices(regions_, keys[i], ptrs[i], sizes[i], &obj);
    if (!out[i].ok()) continue;
    *req.add_objects() = std::move(obj);
    sent.push_back(i);
  }
  *req.mutable_config() = ToProto(ConfigForKeys(config, sent));
  SendPut(req, sent, out);
  return out;
}

Status StandaloneClient::PutFrom(const std::string& key, const void* ptr, size_t size,
                                 const ReplicateConfig& config) {
  return BatchPutFrom({key}, {ptr}, {size}, config)[0];
}

Result<uint64_t> StandaloneClient::GetInto(const std::string& key, void* ptr, size_t size) {
  return BatchGetInto({key}, {ptr}, {size})[0];
}

std::vector<Status> StandaloneClient::BatchPutFrom(const std::vector<std::string>& keys,
                                                   const std::vector<const void*>& ptrs,
                                                   const std::vector<size_t>& sizes,
                                                   const ReplicateConfig& config) {
  return PutSlices(keys, OnePerKey(ptrs), OnePerKey(sizes), config, /*upsert=*/false);
}

std::vector<Status> StandaloneClient::BatchUpsertFrom(const std::vector<std::string>& keys,
                                                      const std::vector<const void*>& ptrs,
                                                      const std::vector<size_t>& sizes,
                                                      const ReplicateConfig& config) {
  return PutSlices(keys, OnePerKey(ptrs), OnePerKey(sizes), config, /*upsert=*/true);
}

std::vector<Status> StandaloneClient::BatchPutFromMultiBuffers(
    const std::vector<std::string>& keys, const std::vector<std::vector<const void*>>& ptrs,
    const std::vector<std::vector<size_t>>& sizes, const ReplicateConfig& config) {
  return PutSlices(keys, ptrs, sizes, config, /*upsert=*/false);
}

std::vector<Result<uint64_t>> StandaloneClient::BatchGetInto(const std::vector<std::string>& keys,
                                                             const std::vector<void*>& ptrs,
                                                             const std::vector<size_t>& sizes) {
  return BatchGetIntoMultiBuffers(keys, OnePerKey(ptrs), OnePerKey(sizes));
}

std::vector<Result<uint64_t>> StandaloneClient::BatchGetIntoMultiBuffers(
    const std::vector<std::string>& keys, const std::vector<std::vector<void*>>& ptrs,
    const std::vector<std::vector<size_t>>& sizes) {
  Status whole = CheckOpen();
  if (whole.ok()) whole = CheckShape(keys, ptrs, sizes);
  if (!whole.ok()) return std::vector<Result<uint64_t>>(keys.size(), whole);
  if (auto chunks = KeyChunks(keys); chunks.size() > 1) {  // too big for one frame
    return ConcatChunks(chunks, [&](size_t b, size_t e) {
      return BatchGetIntoMultiBuffers(PartOf(keys, b, e), PartOf(ptrs, b, e), PartOf(sizes, b, e));
    });
  }
  std::vector<Result<uint64_t>> out(keys.size(), Status(ErrorCode::INTERNAL_ERROR, ""));
  rpc::LocalGet req;
  std::vector<size_t> sent;
  for (size_t i = 0; i < keys.size(); ++i) {
    rpc::LocalObject obj;
    Status st = AddSlices(regions_, keys[i], ptrs[i], sizes[i], &obj);
    if (!st.ok()) {
      out[i] = st;
      continue;
    }
    *req.add_objects() = std::move(obj);
    sent.push_back(i);
  }
  if (sent.empty()) return out;
  rpc::LocalGetReply reply;
  Status call = SendGet(req, &reply);
  for (size_t k = 0; k < sent.size(); ++k) {
    const int kk = static_cast<int>(k);
    if (!call.ok()) {
      out[sent[k]] = call;
    } else if (reply.codes(kk) != 0) {
      out[sent[k]] = Status(ErrorCodeFromInt(reply.codes(kk)), reply.messages(kk));
    } else {
      out[sent[k]] = reply.sizes(kk);
    }
  }
  return out;
}

}  // namespace kvpool::client
