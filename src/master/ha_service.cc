#include "master/ha_service.h"

#include "rpc/kvpool.pb.h"

namespace kvpool::master {
namespace {

constexpr uint32_t kLeaderEpochField = 30;
constexpr uint32_t kRoleField = 31;
constexpr uint32_t kLeaderAddressField = 32;

void AppendVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void AppendUint64Field(std::string& out, uint32_t field, uint64_t v) {
  AppendVarint(out, uint64_t{field} << 3);  // wire type 0: varint
  AppendVarint(out, v);
}

void AppendStringField(std::string& out, uint32_t field, std::string_view s) {
  AppendVarint(out, (uint64_t{field} << 3) | 2);  // wire type 2: length-delimited
  AppendVarint(out, s.size());
  out.append(s);
}

// Methods whose reply message has leader_epoch = 30.
bool CarriesEpoch(uint16_t method) {
  switch (method) {
    case rpc::PING:
    case rpc::MOUNT_SEGMENT:
    case rpc::PUT_START:
    case rpc::PUT_END:
    case rpc::GET_REPLICA_LIST:
    case rpc::EXISTS:
    case rpc::EXISTS_PREFIX:
    case rpc::REMOVE:
    case rpc::REMOVE_ALL:
    case rpc::STAT:
      return true;
    default:
      return false;
  }
}

}  // namespace

void HaService::Stamp(uint16_t method, uint64_t epoch, const HaView& view, rpc::Reply& reply) {
  if (reply.code != ErrorCode::OK || !CarriesEpoch(method)) return;
  AppendUint64Field(reply.meta, kLeaderEpochField, epoch);
  if (method == rpc::STAT) {
    AppendStringField(reply.meta, kRoleField, view.role);
    AppendStringField(reply.meta, kLeaderAddressField, view.leader);
  }
}

asio::awaitable<rpc::Reply> HaService::Guard(const rpc::FrameHeader& header,
                                             asio::awaitable<rpc::Reply> inner) {
  const uint16_t method = header.base_method();
  if (Status st = election_->Admit(method); !st.ok()) co_return rpc::Reply::Error(st);
  const uint64_t epoch = election_->serving_epoch();
  rpc::Reply reply = co_await std::move(inner);
  // Paused (or cut off) while answering: what was decided may already belong to a new leader.
  if (Status st = election_->Admit(method); !st.ok() && st.code() == ErrorCode::NOT_LEADER) {
    co_return rpc::Reply::Error(st);
  }
  Stamp(method, epoch, method == rpc::STAT ? election_->view() : HaView{}, reply);
  co_return reply;
}

asio::awaitable<rpc::Reply> HaService::Handle(const rpc::FrameHeader& header, std::string_view meta,
                                              rpc::PayloadReader& payload) {
  co_return co_await Guard(header, inner_->Handle(header, meta, payload));
}

asio::awaitable<rpc::Reply> HaService::HandleFrom(const rpc::ConnectionContext& context,
                                                  const rpc::FrameHeader& header,
                                                  std::string_view meta,
                                                  rpc::PayloadReader& payload) {
  co_return co_await Guard(header, inner_->HandleFrom(context, header, meta, payload));
}

}  // namespace kvpool::master
