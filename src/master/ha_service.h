// The master's RPC front under high availability: a standby, or a leader whose lease is not
// fresh, answers every request with NOT_LEADER (clients ask etcd again); a leader's answers carry
// its leadership epoch (the replies' leader_epoch field), so that nodes and clients can refuse
// answers of an older leader. Without HA the master serves MasterService directly (no cost).
//
// The epoch is appended to the encoded reply as one more field (protobuf merges concatenated
// messages; every reply of a key or node method has leader_epoch = 30, StatReply also ha_role =
// 31 and leader_address = 32). A request admitted whose lease lapsed while it ran (the process
// was paused) is answered NOT_LEADER instead of its result.
//
// Threading: thread-safe; adds two atomic loads per request.
#pragma once

#include "master/leader_election.h"
#include "master/master_service.h"
#include "rpc/server.h"

namespace kvpool::master {

class HaService : public rpc::Service {
 public:
  // Both must outlive the service.
  HaService(MasterService* inner, const LeaderElection* election)
      : inner_(inner), election_(election) {}

  asio::awaitable<rpc::Reply> Handle(const rpc::FrameHeader& header, std::string_view meta,
                                     rpc::PayloadReader& payload) override;
  asio::awaitable<rpc::Reply> HandleFrom(const rpc::ConnectionContext& context,
                                         const rpc::FrameHeader& header, std::string_view meta,
                                         rpc::PayloadReader& payload) override;

  // Appends leader_epoch (and for STAT the role and leader) to an OK reply of `method`.
  static void Stamp(uint16_t method, uint64_t epoch, const HaView& view, rpc::Reply& reply);

 private:
  // Checks before and after `inner`'s answer. `inner` has not started (asio's awaitables start
  // when awaited): a request refused up front never runs it.
  asio::awaitable<rpc::Reply> Guard(const rpc::FrameHeader& header,
                                    asio::awaitable<rpc::Reply> inner);

  MasterService* const inner_;
  const LeaderElection* const election_;
};

}  // namespace kvpool::master
