// Attach service: sessions, region registration, liveness.
#include "node/attach_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/units.h"

namespace kvpool::node {

LocalReply LocalReply::Of(const google::protobuf::MessageLite& msg) {
  LocalReply r;
  msg.SerializeToString(&r.meta);
  return r;
}

LocalReply LocalReply::Error(const Status& st) {
  LocalReply r;
  r.code = st.ok() ? ErrorCode::INTERNAL_ERROR : st.code();
  r.message = st.message();
  return r;
}

namespace {

// A protocol violation: answered, then the connection is closed.
LocalReply Violation(const std::string& message) {
  LocalReply r = LocalReply::Error(Status(ErrorCode::INVALID_PARAMS, message));
  r.close = true;
  return r;
}

}  // namespace

AttachService::AttachService(client::HostedClient* store, AttachServiceOptions options)
    : store_(store), options_(std::move(options)) {}

AttachService::~AttachService() { DropAll(); }

LocalReply AttachService::Handle(LocalConnection& conn, rpc::UnixFrame& frame) {
  const uint16_t method = frame.header.method;
  if (!frame.fds.empty() && (method != rpc::REGISTER_REGION || frame.fds.size() != 1)) {
    return Violation(fmt::format("method {} came with {} descriptors", method, frame.fds.size()));
  }
  if (method == rpc::ATTACH || method == rpc::JOIN_SESSION) {
    if (conn.session != nullptr) {
      return LocalReply::Error(
          Status(ErrorCode::ILLEGAL_CLIENT, "this connection already belongs to a session"));
    }
    if (method == rpc::ATTACH) {
      rpc::Attach req;
      if (!ParseAttachMeta(frame.meta, &req)) return Violation("unparsable Attach");
      return Attach(conn, req);
    }
    rpc::JoinSession req;
    if (!ParseAttachMeta(frame.meta, &req)) return Violation("unparsable JoinSession");
    return Join(conn, req);
  }
  if (method == rpc::NODE_STATUS) return LocalReply::Of(NodeStatus());
  if (conn.session == nullptr) {
    return LocalReply::Error(Status(ErrorCode::ILLEGAL_CLIENT,
                                    fmt::format("method {}: attach to the node first", method)));
  }
  if (conn.session->dropped()) {
    LocalReply r = LocalReply::Error(
        Status(ErrorCode::CLIENT_NOT_FOUND, "the node dropped this session; attach again"));
    r.close = true;
    return r;
  }
  conn.session->Touch();  // any request counts as a sign of life
  switch (method) {
    case rpc::REGISTER_REGION: {
      rpc::RegisterRegion req;
      if (frame.fds.size() != 1) return Violation("REGISTER_REGION needs exactly 1 descriptor");
      if (!ParseAttachMeta(frame.meta, &req)) return Violation("unparsable RegisterRegion");
      return RegisterRegion(conn, req, frame.fds[0].get());
    }
    case rpc::UNREGISTER_REGION: {
      rpc::UnregisterRegion req;
      if (!ParseAttachMeta(frame.meta, &req)) return Violation("unparsable UnregisterRegion");
      return UnregisterRegion(conn, req);
    }
    case rpc::LOCAL_HEARTBEAT: {
      rpc::LocalHeartbeatReply reply;
      reply.set_master_reachable(store_->MasterReachable());
      return LocalReply::Of(reply);
    }
    default:
      return Dispatch(conn, method, frame.meta);
  }
}

LocalReply AttachService::Attach(LocalConnection& conn, const rpc::Attach& req) {
  SessionInfo info;
  info.client_id = req.client_id();
  info.pid = conn.peer.pid >= 0 ? conn.peer.pid : static_cast<int>(req.pid());
  info.uid = conn.peer.uid;
  info.mem_pool_size = req.mem_pool_size();
  auto session = sessions_.Create(std::move(info));
  session->AddConnection(conn.handle);
  conn.session = session;
  conn.anchors_session = true;
  ++counters_.sessions_attached;
  spdlog::info(
      "attached local client pid={} uid={} session={} mem_pool_size={} "
      "local_buffer_size={}",
      session->info().pid, session->info().uid, session->info().id, FormatSize(req.mem_pool_size()),
      FormatSize(req.local_buffer_size()));
  rpc::AttachReply reply;
  reply.set_session_id(session->info().id);
  reply.set_session_token(session->info().token);
  reply.set_segment_name(store_->SegmentName());
  reply.set_client_ttl_ms(
      static_cast<uint64_t>(std::chrono::duration_cast<Millis>(options_.client_ttl).count()));
  reply.set_master_server_address(options_.direct_master_address);
  return LocalReply::Of(reply);
}

LocalReply AttachService::Join(LocalConnection& conn, const rpc::JoinSession& req) {
  auto session = sessions_.Find(req.session_id(), req.session_token());
  if (session == nullptr || !session->AddConnection(conn.handle)) {
    return LocalReply::Error(Status(
        ErrorCode::CLIENT_NOT_FOUND,
        fmt::format("session={} is not attached to this node; attach again", req.session_id())));
  }
  conn.session = std::move(session);
  return LocalReply::Of(rpc::Empty());
}

LocalReply AttachService::RegisterRegion(LocalConnection& conn, const rpc::RegisterRegion& req,
                                         int fd) {
  auto region = MappedRegion::Map(fd, req.size(), req.staging());
  if (!region.ok()) {
    spdlog::warn("refused region={} of session={}: {}", req.region_id(), conn.session->info().id,
                 region.status().ToString());
    return LocalReply::Error(region.status());
  }
  std::shared_ptr<MappedRegion> replaced;
  // A replaced region is unmapped once the operations in flight that hold it finish.
  if (!conn.session->AddRegion(req.region_id(), *region, &replaced)) {
    return LocalReply::Error(
        Status(ErrorCode::CLIENT_NOT_FOUND, "the node dropped this session; attach again"));
  }
  spdlog::debug("session={} mapped region={} size={}{}", conn.session->info().id, req.region_id(),
                FormatSize(req.size()), req.staging() ? " (staging)" : "");
  return LocalReply::Of(rpc::Empty());
}

LocalReply AttachService::UnregisterRegion(LocalConnection& conn,
                                           const rpc::UnregisterRegion& req) {
  auto region = conn.session->RemoveRegion(req.region_id());
  if (region == nullptr) {
    return LocalReply::Error(Status(ErrorCode::INVALID_PARAMS,
                                    fmt::format("region={} is not registered", req.region_id())));
  }
  return LocalReply::Of(rpc::Empty());  // unmapped once operations in flight release it
}

void AttachService::Disconnected(LocalConnection& conn) {
  if (conn.session == nullptr) return;
  conn.session->RemoveConnection(conn.handle);
  if (conn.anchors_session) {
    if (auto s = sessions_.Remove(conn.session->info().id); s != nullptr) {
      DropSession(s, "disconnected");
    }
  }
  conn.session.reset();
}

void AttachService::DropSession(const std::shared_ptr<Session>& session, const char* why) {
  auto regions = session->Drop();
  uint64_t bytes = 0;
  for (const auto& r : regions) bytes += r->size();
  ++counters_.sessions_dropped;
  spdlog::info("dropped local client pid={} session={} ({}): released {} regions, {}",
               session->info().pid, session->info().id, why, regions.size(), FormatSize(bytes));
}

void AttachService::DropSilent() {
  for (const auto& s : sessions_.RemoveSilent(options_.client_ttl)) {
    DropSession(s, "silent past the client TTL");
  }
}

void AttachService::DropAll() {
  for (const auto& s : sessions_.RemoveAll()) DropSession(s, "node stopping");
}

rpc::NodeStatusReply AttachService::NodeStatus() const {
  rpc::NodeStatusReply r;
  r.set_segment_name(store_->SegmentName());
  uint64_t regions = 0, bytes = 0;
  auto sessions = sessions_.Snapshot();
  for (const auto& s : sessions) {
    regions += s->region_count();
    bytes += s->mapped_bytes();
  }
  r.set_sessions(sessions.size());
  r.set_regions(regions);
  r.set_mapped_bytes(bytes);
  r.set_copied_bytes(counters_.copied_bytes.load());
  r.set_zero_copy_bytes(counters_.zero_copy_bytes.load());
  r.set_sessions_dropped(counters_.sessions_dropped.load());
  return r;
}

}  // namespace kvpool::node
