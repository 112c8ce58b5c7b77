#include "master/master_service.h"

#include <fmt/format.h>

#include "rpc/kvpool.pb.h"

namespace kvpool::master {
namespace {

template <typename M>
bool Parse(std::string_view meta, M* msg) {
  return msg->ParseFromArray(meta.data(), static_cast<int>(meta.size()));
}

rpc::Reply Unparsable(std::string_view method) {
  return rpc::Reply::Error(
      Status(ErrorCode::INVALID_PARAMS, fmt::format("{}: request does not parse", method)));
}

rpc::Reply ReplyOf(const Status& st) {
  return st.ok() ? rpc::Reply::Of(rpc::Empty()) : rpc::Reply::Error(st);
}

template <typename T>
rpc::Reply ReplyOf(const Result<T>& r) {
  return r.ok() ? rpc::Reply::Of(r.value()) : rpc::Reply::Error(r.status());
}

rpc::Reply ReplyOf(const google::protobuf::MessageLite& m) { return rpc::Reply::Of(m); }

// Parses a `Req` from `meta` and answers `call(req)`.
template <typename Req, typename Call>
rpc::Reply Serve(std::string_view name, std::string_view meta, Call&& call) {
  Req req;
  if (!Parse(meta, &req)) return Unparsable(name);
  return ReplyOf(call(req));
}

}  // namespace

rpc::Reply MasterService::Dispatch(uint16_t method, std::string_view meta) {
  MasterCore& c = *core_;
  const auto now = clock_();
  switch (method) {
    case rpc::PING:
      return Serve<rpc::Ping>("ping", meta, [&](const auto& r) { return c.Ping(r, now); });
    case rpc::MOUNT_SEGMENT:
      return Serve<rpc::MountSegment>("mount segment", meta,
                                      [&](const auto& r) { return c.MountSegment(r, now); });
    case rpc::UNMOUNT_SEGMENT:
      return Serve<rpc::UnmountSegment>("unmount segment", meta,
                                        [&](const auto& r) { return c.UnmountSegment(r, now); });
    case rpc::PUT_START:
      return Serve<rpc::PutStart>("put start", meta,
                                  [&](const auto& r) { return c.PutStart(r, now); });
    case rpc::PUT_END:
      return Serve<rpc::PutEnd>("put end", meta, [&](const auto& r) { return c.PutEnd(r, now); });
    case rpc::GET_REPLICA_LIST:
      return Serve<rpc::KeysRequest>("get replica list", meta,
                                     [&](const auto& r) { return c.GetReplicaList(r, now); });
    case rpc::EXISTS:
      return Serve<rpc::KeysRequest>("exists", meta,
                                     [&](const auto& r) { return c.Exists(r, now); });
    case rpc::EXISTS_PREFIX:
      return Serve<rpc::KeysRequest>("exists prefix", meta,
                                     [&](const auto& r) { return c.ExistsPrefix(r, now); });
    case rpc::REMOVE:
      return Serve<rpc::KeysRequest>("remove", meta,
                                     [&](const auto& r) { return c.Remove(r, now); });
    case rpc::REMOVE_ALL:
      return Serve<rpc::RemoveAll>("remove all", meta,
                                   [&](const auto& r) { return c.RemoveAll(r, now); });
    case rpc::STAT:
      return Serve<rpc::Empty>("stat", meta, [&](const auto&) { return c.Stat(); });
    default:
      return rpc::Reply::Error(Status(
          ErrorCode::NOT_SUPPORTED, fmt::format("method {} is not served by the master", method)));
  }
}

asio::awaitable<rpc::Reply> MasterService::Handle(const rpc::FrameHeader& header,
                                                  std::string_view meta,
                                                  rpc::PayloadReader& payload) {
  if (payload.size() != 0) {
    co_return rpc::Reply::Error(
        Status(ErrorCode::INVALID_PARAMS,
               fmt::format("master requests carry no payload; got {} bytes", payload.size())));
  }
  co_return Dispatch(header.base_method(), meta);
}

}  // namespace kvpool::master
