// Attach service: the batch and metadata calls of attached clients. Slices are checked against
// the session's mapped regions (the one range check on the standalone path) and turned into the
// node's own addresses of the client's pages; the store then moves the bytes (memcpy for the
// node's segment, TCP for peers') in one pass: one master round trip per phase for the whole
// batch, its transfer plan splitting large batches over several cores.
#include <fmt/format.h>

#include <map>

#include "client/shared/pool_stat_proto.h"
#include "client/shared/replicate_config_proto.h"
#include "node/attach_service.h"

namespace kvpool::node {
namespace {

constexpr uint64_t kPackAlign = 64;

// The node must answer by the client's deadline (same host: one monotonic clock).
Deadline LimitOf(uint64_t deadline_ns) {
  const Deadline now = Clock::now();
  if (deadline_ns == 0) return now + std::chrono::seconds(60);
  Deadline d{std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(deadline_ns))};
  return std::min(d, now + std::chrono::hours(1));
}

// Objects of a request that passed translation, as the store's batch arguments.
struct Translated {
  ObjectBatch batch;          // the node's addresses of each object's slices
  std::vector<size_t> index;  // request index of each object
  std::vector<bool> staging;  // through a staging region (copying path)
  std::map<uint64_t, std::shared_ptr<MappedRegion>> hold;  // keeps regions mapped meanwhile
};

Status CheckSlice(const std::string& key, const rpc::Slice& s, const MappedRegion* region) {
  if (region == nullptr) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("key={}: region={} is not registered with this node (register the "
                              "buffer again)",
                              key, s.region_id()));
  }
  if (s.offset() > region->size() || s.length() > region->size() - s.offset()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("key={}: slice offset={} length={} lies outside region={} of {} "
                              "bytes",
                              key, s.offset(), s.length(), s.region_id(), region->size()));
  }
  return Status::Ok();
}

// Translates every object; failures land in `errors` (sized to the request).
Translated Translate(const Session& session,
                     const google::protobuf::RepeatedPtrField<rpc::LocalObject>& objects,
                     std::vector<Status>& errors) {
  Translated t;
  errors.assign(objects.size(), Status::Ok());
  t.batch.Reserve(objects.size(), objects.size());
  for (int i = 0; i < objects.size(); ++i) {
    const rpc::LocalObject& obj = objects[i];
    for (const rpc::Slice& s : obj.slices()) {
      auto& region = t.hold[s.region_id()];
      if (region == nullptr) region = session.FindRegion(s.region_id());
      errors[i] = CheckSlice(obj.key(), s, region.get());
      if (!errors[i].ok()) break;
    }
    if (!errors[i].ok()) continue;
    bool staging = false;
    t.batch.AddObject(obj.key());
    for (const rpc::Slice& s : obj.slices()) {
      const MappedRegion& region = *t.hold[s.region_id()];
      t.batch.AddBuffer(region.base() + s.offset(), s.length());
      staging = staging || region.staging();
    }
    t.index.push_back(static_cast<size_t>(i));
    t.staging.push_back(staging);
  }
  return t;
}

void SetCode(const Status& st, google::protobuf::RepeatedField<int32_t>* codes,
             google::protobuf::RepeatedPtrField<std::string>* messages, int i) {
  codes->Set(i, static_cast<int32_t>(st.code()));
  *messages->Mutable(i) = st.message();
}

}  // namespace

LocalReply AttachService::Dispatch(LocalConnection& conn, uint16_t method,
                                   const std::string& meta) {
  switch (method) {
    case rpc::LOCAL_PUT: {
      rpc::LocalPut req;
      if (!ParseAttachMeta(meta, &req)) {
        LocalReply r = LocalReply::Error(Status(ErrorCode::INVALID_PARAMS, "unparsable LocalPut"));
        r.close = true;
        return r;
      }
      return Put(*conn.session, req);
    }
    case rpc::LOCAL_GET: {
      rpc::LocalGet req;
      if (!ParseAttachMeta(meta, &req)) {
        LocalReply r = LocalReply::Error(Status(ErrorCode::INVALID_PARAMS, "unparsable LocalGet"));
        r.close = true;
        return r;
      }
      return req.has_pack() ? GetPacked(*conn.session, req) : Get(*conn.session, req);
    }
    case rpc::LOCAL_EXISTS:
    case rpc::LOCAL_EXISTS_PREFIX:
    case rpc::LOCAL_GET_SIZE:
    case rpc::LOCAL_REMOVE:
    case rpc::LOCAL_REMOVE_ALL:
    case rpc::LOCAL_SCAN_KEYS:
    case rpc::LOCAL_STAT:
      return Query(method, meta);
    default:
      return LocalReply::Error(
          Status(ErrorCode::NOT_SUPPORTED,
                 fmt::format("method {} is not served on the local socket", method)));
  }
}

LocalReply AttachService::Put(Session& session, const rpc::LocalPut& req) {
  const Deadline limit = LimitOf(req.deadline_ns());
  const ReplicateConfig config = client::FromProto(req.config());
  if (Status st = client::CheckGroupIds(config, req.objects_size()); !st.ok()) {
    return LocalReply::Error(st);
  }
  std::vector<Status> status;
  Translated t = Translate(session, req.objects(), status);
  // The store gets only the objects that passed translation: their group ids with them.
  const std::vector<Status> results =
      store_->PutVouched(t.batch, client::ConfigForKeys(config, t.index), req.upsert(), limit);
  rpc::CodesReply reply;
  reply.mutable_codes()->Resize(req.objects_size(), 0);
  for (int i = 0; i < req.objects_size(); ++i) reply.add_messages();
  for (size_t k = 0; k < t.batch.size(); ++k) {
    status[t.index[k]] = results[k];
    if (!results[k].ok()) continue;
    (t.staging[k] ? counters_.copied_bytes : counters_.zero_copy_bytes) += t.batch.bytes(k);
  }
  for (int i = 0; i < req.objects_size(); ++i) {
    SetCode(status[i], reply.mutable_codes(), reply.mutable_messages(), i);
  }
  return LocalReply::Of(reply);
}

LocalReply AttachService::Get(Session& session, const rpc::LocalGet& req) {
  const Deadline limit = LimitOf(req.deadline_ns());
  std::vector<Status> status;
  Translated t = Translate(session, req.objects(), status);
  const std::vector<Result<uint64_t>> results =
      store_->GetVouched(t.batch, limit, req.verify_checksum());
  rpc::LocalGetReply reply;
  const int n = req.objects_size();
  reply.mutable_codes()->Resize(n, 0);
  reply.mutable_sizes()->Resize(n, 0);
  for (int i = 0; i < n; ++i) reply.add_messages();
  for (size_t k = 0; k < t.batch.size(); ++k) {
    const int i = static_cast<int>(t.index[k]);
    if (!results[k].ok()) {
      status[i] = results[k].status();
      continue;
    }
    reply.set_sizes(i, *results[k]);
    (t.staging[k] ? counters_.copied_bytes : counters_.zero_copy_bytes) += *results[k];
  }
  for (int i = 0; i < n; ++i)
    SetCode(status[i], reply.mutable_codes(), reply.mutable_messages(), i);
  return LocalReply::Of(reply);
}

LocalReply AttachService::GetPacked(Session& session, const rpc::LocalGet& req) {
  const Deadline limit = LimitOf(req.deadline_ns());
  const rpc::Slice& pack = req.pack();
  auto region = session.FindRegion(pack.region_id());
  if (Status st = CheckSlice("(staging)", pack, region.get()); !st.ok()) {
    return LocalReply::Error(st);
  }
  const int n = req.objects_size();
  std::vector<std::string> keys;
  keys.reserve(n);
  for (const auto& o : req.objects()) keys.push_back(o.key());
  rpc::LocalGetReply reply;
  reply.mutable_codes()->Resize(n, 0);
  reply.mutable_sizes()->Resize(n, 0);
  reply.mutable_offsets()->Resize(n, 0);
  reply.mutable_deferred()->Resize(n, false);
  for (int i = 0; i < n; ++i) reply.add_messages();
  uint8_t* const base = region->base() + pack.offset();
  uint64_t used = 0;
  // Objects are placed in key order; one that does not fit in what is left is deferred.
  auto dest_for = [&](size_t i, uint64_t size) -> client::Buffers {
    const int ii = static_cast<int>(i);
    reply.set_sizes(ii, size);
    const uint64_t at = (used + kPackAlign - 1) / kPackAlign * kPackAlign;
    if (at > pack.length() || size > pack.length() - at) {
      reply.set_deferred(ii, true);
      return {};
    }
    used = at + size;
    reply.set_offsets(ii, at);
    return {{base + at, size}};
  };
  auto results = store_->GetWithDest(keys, dest_for, limit, req.verify_checksum());
  for (int i = 0; i < n; ++i) {
    if (reply.deferred(i)) continue;
    if (!results[i].ok()) {
      SetCode(results[i].status(), reply.mutable_codes(), reply.mutable_messages(), i);
      continue;
    }
    reply.set_sizes(i, *results[i]);
    counters_.copied_bytes += *results[i];
  }
  return LocalReply::Of(reply);
}

LocalReply AttachService::Query(uint16_t method, const std::string& meta) {
  if (method == rpc::LOCAL_STAT) {
    auto s = store_->Stat();
    if (!s.ok()) return LocalReply::Error(s.status());
    return LocalReply::Of(client::ToProto(*s));
  }
  if (method == rpc::LOCAL_SCAN_KEYS) {
    rpc::ScanKeys req;
    if (!ParseAttachMeta(meta, &req))
      return LocalReply::Error(Status(ErrorCode::INVALID_PARAMS, "unparsable"));
    auto page = store_->ScanKeys(req.prefix(), req.cursor(), req.limit());
    if (!page.ok()) return LocalReply::Error(page.status());
    rpc::ScanKeysReply r;
    for (const std::string& k : page->keys) r.add_keys(k);
    r.set_next_cursor(page->next_cursor);
    return LocalReply::Of(r);
  }
  if (method == rpc::LOCAL_REMOVE_ALL) {
    rpc::RemoveAll req;
    if (!ParseAttachMeta(meta, &req))
      return LocalReply::Error(Status(ErrorCode::INVALID_PARAMS, "unparsable"));
    auto n = store_->RemoveAll(req.force());
    if (!n.ok()) return LocalReply::Error(n.status());
    rpc::RemoveAllReply r;
    r.set_removed(*n);
    return LocalReply::Of(r);
  }
  rpc::KeysRequest req;
  if (!ParseAttachMeta(meta, &req))
    return LocalReply::Error(Status(ErrorCode::INVALID_PARAMS, "unparsable"));
  std::vector<std::string> keys(req.keys().begin(), req.keys().end());
  if (method == rpc::LOCAL_EXISTS_PREFIX) {
    auto n = store_->ExistsPrefix(keys);
    if (!n.ok()) return LocalReply::Error(n.status());
    rpc::ExistsPrefixReply r;
    r.set_count(static_cast<uint32_t>(*n));
    return LocalReply::Of(r);
  }
  if (method == rpc::LOCAL_GET_SIZE) {
    rpc::LocalGetReply r;
    for (const auto& k : keys) {
      auto size = store_->GetSize(k);
      r.add_codes(static_cast<int32_t>(size.code()));
      r.add_messages(size.status().message());
      r.add_sizes(size.ok() ? *size : 0);
    }
    return LocalReply::Of(r);
  }
  rpc::CodesReply r;
  if (method == rpc::LOCAL_EXISTS) {
    for (const auto& e : store_->BatchIsExist(keys)) {
      r.add_codes(e.ok() ? (*e ? 1 : 0) : static_cast<int32_t>(e.code()));
      r.add_messages(e.status().message());
    }
  } else {  // LOCAL_REMOVE
    for (const auto& st : store_->BatchRemove(keys, req.force())) {
      r.add_codes(static_cast<int32_t>(st.code()));
      r.add_messages(st.message());
    }
  }
  return LocalReply::Of(r);
}

}  // namespace kvpool::node
