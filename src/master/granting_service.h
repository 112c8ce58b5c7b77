// The master's RPC service as the server sees it: MasterService, plus data-plane grants
// (grant_issuer.h) signed into the replica locations of a tenant (non-privileged) connection's
// PUT_START (WRITE) and leased GET_REPLICA_LIST (READ) replies. A privileged connection's
// requests and replies pass through untouched, at no cost.
//
// For a tenant's location reply: one parse and one serialization of the reply, and one HMAC
// (about 1 µs) per replica.
//
// Threading: thread-safe (MasterService and GrantIssuer are).
#pragma once

#include "master/grant_issuer.h"
#include "master/master_service.h"
#include "rpc/server.h"

namespace kvpool::master {

class GrantingService : public rpc::Service {
 public:
  // `inner` must outlive this service.
  GrantingService(MasterService* inner, GrantIssuer grants)
      : inner_(inner), grants_(std::move(grants)) {}

  // As a privileged peer: inner->Handle.
  asio::awaitable<rpc::Reply> Handle(const rpc::FrameHeader& header, std::string_view meta,
                                     rpc::PayloadReader& payload) override;
  // inner->HandleFrom, then grants for a non-privileged `context`.
  asio::awaitable<rpc::Reply> HandleFrom(const rpc::ConnectionContext& context,
                                         const rpc::FrameHeader& header, std::string_view meta,
                                         rpc::PayloadReader& payload) override;

  // Signs grants into `reply`, the answer to `method` with request `meta`, for a tenant: WRITE
  // grants for PUT_START, READ grants for GET_REPLICA_LIST unless it took no lease (nothing
  // then keeps the ranges from being reused). Other methods and error replies are unchanged.
  void AttachGrants(uint16_t method, std::string_view meta, rpc::Reply& reply) const;

 private:
  MasterService* const inner_;
  const GrantIssuer grants_;
};

}  // namespace kvpool::master
