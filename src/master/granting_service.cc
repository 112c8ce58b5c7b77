#include "master/granting_service.h"

#include <spdlog/spdlog.h>

#include "rpc/kvpool.pb.h"

namespace kvpool::master {
namespace {

template <typename M>
bool Parse(std::string_view bytes, M* msg) {
  return msg->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

// Parses `reply`'s meta as an M, lets `sign` add grants and serializes it back.
template <typename M, typename Sign>
void Resign(rpc::Reply& reply, Sign&& sign) {
  M m;
  if (!Parse(reply.meta, &m)) {
    // Our own MasterService wrote it: never happens. Refuse rather than hand out no grants.
    spdlog::error("master: cannot re-parse a reply to sign grants into it");
    reply = rpc::Reply::Error(Status(ErrorCode::INTERNAL_ERROR, "cannot sign grants"));
    return;
  }
  sign(m);
  reply.meta.clear();
  m.SerializeToString(&reply.meta);
}

}  // namespace

asio::awaitable<rpc::Reply> GrantingService::Handle(const rpc::FrameHeader& header,
                                                    std::string_view meta,
                                                    rpc::PayloadReader& payload) {
  co_return co_await inner_->Handle(header, meta, payload);
}

asio::awaitable<rpc::Reply> GrantingService::HandleFrom(const rpc::ConnectionContext& context,
                                                        const rpc::FrameHeader& header,
                                                        std::string_view meta,
                                                        rpc::PayloadReader& payload) {
  rpc::Reply reply = co_await inner_->HandleFrom(context, header, meta, payload);
  if (!context.privileged) AttachGrants(header.base_method(), meta, reply);
  co_return reply;
}

void GrantingService::AttachGrants(uint16_t method, std::string_view meta,
                                   rpc::Reply& reply) const {
  if (reply.code != ErrorCode::OK || !grants_.enabled()) return;
  if (method == rpc::PUT_START) {
    Resign<rpc::PutStartReply>(
        reply, [&](rpc::PutStartReply& m) { grants_.Attach(m, rpc::UnixMillisNow()); });
  } else if (method == rpc::GET_REPLICA_LIST) {
    rpc::KeysRequest req;
    if (!Parse(meta, &req) || req.no_lease()) return;
    Resign<rpc::GetReplicaListReply>(
        reply, [&](rpc::GetReplicaListReply& m) { grants_.Attach(m, rpc::UnixMillisNow()); });
  }
}

}  // namespace kvpool::master
