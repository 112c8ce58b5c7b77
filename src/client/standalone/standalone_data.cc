// Standalone zero-copy batches: the caller's buffers become (region, offset, length) slices and
// the node moves the bytes. Nothing but these names crosses the socket.
#include <fmt/format.h>

#include "client/standalone/key_chunked.h"
#include "client/shared/replicate_config_proto.h"
#include "client/standalone/standalone_client.h"

namespace kvpool::client {
namespace {

uint64_t ToNanos(Deadline d) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(d.time_since_epoch()).count());
}

// Translates object i's buffers into slices of `obj`. Errors as RegionTable::Translate.
Status AddSlices(const RegionTable& regions, const ObjectBatch& batch, size_t i,
                 rpc::LocalObject* obj) {
  obj->set_key(batch.key(i));
  for (const iovec& b : batch.buffers(i)) {
    auto slice = regions.Translate(b.iov_base, b.iov_len, fmt::format("key={}", batch.key(i)));
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

void StandaloneClient::PutObjects(const ObjectBatch& batch, const ReplicateConfig& config,
                                  bool upsert, bool registered, std::vector<Status>& results) {
  const bool chunked =
      SendInChunks(batch, results, [&](const ObjectBatch& part, size_t b, size_t e, auto& r) {
        PutObjects(part, ConfigForKeys(config, b, e), upsert, registered, r);
      });
  if (chunked) return;
  if (registered) {
    PutSlices(batch, config, upsert, results);
  } else {
    PutCopies(batch, config, results);
  }
}

void StandaloneClient::PutSlices(const ObjectBatch& batch, const ReplicateConfig& config,
                                 bool upsert, std::vector<Status>& results) {
  rpc::LocalPut req;
  req.set_upsert(upsert);
  std::vector<size_t> sent;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!results[i].ok()) continue;
    rpc::LocalObject obj;
    results[i] = AddSlices(regions_, batch, i, &obj);
    if (!results[i].ok()) continue;
    *req.add_objects() = std::move(obj);
    sent.push_back(i);
  }
  *req.mutable_config() = ToProto(ConfigForKeys(config, sent));
  SendPut(req, sent, results);
}

void StandaloneClient::GetObjects(const ObjectBatch& batch,
                                  std::vector<Result<uint64_t>>& results) {
  const bool chunked =
      SendInChunks(batch, results,
                   [&](const ObjectBatch& part, size_t, size_t, auto& r) { GetSlices(part, r); });
  if (!chunked) GetSlices(batch, results);
}

void StandaloneClient::GetSlices(const ObjectBatch& batch, std::vector<Result<uint64_t>>& results) {
  rpc::LocalGet req;
  std::vector<size_t> sent;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!results[i].ok()) continue;
    rpc::LocalObject obj;
    if (Status st = AddSlices(regions_, batch, i, &obj); !st.ok()) {
      results[i] = st;
      continue;
    }
    *req.add_objects() = std::move(obj);
    sent.push_back(i);
  }
  if (sent.empty()) return;
  rpc::LocalGetReply reply;
  Status call = SendGet(req, &reply);
  for (size_t k = 0; k < sent.size(); ++k) {
    const int kk = static_cast<int>(k);
    if (!call.ok()) {
      results[sent[k]] = call;
    } else if (reply.codes(kk) != 0) {
      results[sent[k]] = Status(ErrorCodeFromInt(reply.codes(kk)), reply.messages(kk));
    } else {
      results[sent[k]] = reply.sizes(kk);
    }
  }
}

}  // namespace kvpool::client
