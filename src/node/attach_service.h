// What the node does for attached standalone clients: sessions and region registration
// (attach_service.cc) and their batch and metadata calls (attach_data.cc), served by the node's
// own store (a client::HostedClient that hosts the node's segment). A batch names the client's
// memory as (region id, offset, length); the service checks every slice against its mapped region,
// translates it to the node's own address of the same pages and calls the store, which copies
// by memcpy for the node's segment and over TCP for peers' segments.
//
// Thread-safe: every connection's thread calls Handle concurrently.
#pragma once

#include <google/protobuf/message_lite.h>

#include <atomic>
#include <memory>
#include <string>

#include "client/embedded/hosted_client.h"
#include "node/attach_session.h"
#include "rpc/kvpool.pb.h"
#include "rpc/unix_socket.h"

namespace kvpool::node {

// Parses a request's protobuf metadata into `msg`; false when it is not a valid Msg.
template <typename Msg>
bool ParseAttachMeta(const std::string& meta, Msg* msg) {
  return msg->ParseFromArray(meta.data(), static_cast<int>(meta.size()));
}

struct AttachServiceOptions {
  Clock::duration client_ttl = std::chrono::seconds(10);  // silence before a session is dropped
  // Handed to attaching engines (AttachReply.master_server_address) so they ask the master
  // exists and prefix queries themselves; empty keeps them relayed. The node sets it only
  // when the pool needs no credential: an engine then learns nothing it could not reach anyway.
  std::string direct_master_address;
};

struct AttachCounters {
  std::atomic<uint64_t> sessions_attached{0};
  std::atomic<uint64_t> sessions_dropped{0};
  std::atomic<uint64_t> copied_bytes{0};     // through staging regions (the copying path)
  std::atomic<uint64_t> zero_copy_bytes{0};  // straight to/from clients' registered pages
};

// A local connection's state, owned by its server thread.
struct LocalConnection {
  std::shared_ptr<ConnectionHandle> handle;
  rpc::PeerCredentials peer;
  std::shared_ptr<Session> session;
  bool anchors_session = false;  // the connection that attached: its end ends the session
};

// The answer to one local request.
struct LocalReply {
  ErrorCode code = ErrorCode::OK;
  std::string message;
  std::string meta;    // the serialized response when OK
  bool close = false;  // end the connection after answering (protocol violation)

  static LocalReply Of(const google::protobuf::MessageLite& msg);
  static LocalReply Error(const Status& st);
};

class AttachService {
 public:
  // `store` must outlive the service.
  AttachService(client::HostedClient* store, AttachServiceOptions options);
  ~AttachService();  // drops every session

  // Handles one request (HELLO already done). Descriptors in `frame` are consumed or closed.
  LocalReply Handle(LocalConnection& conn, rpc::UnixFrame& frame);
  // The connection ended: if it anchored a session, the session is dropped.
  void Disconnected(LocalConnection& conn);
  // Drops sessions silent for longer than the client TTL. Called periodically.
  void DropSilent();
  // Drops every session (node shutdown).
  void DropAll();

  rpc::NodeStatusReply NodeStatus() const;
  const AttachCounters& counters() const { return counters_; }

 private:
  // attach_service.cc
  LocalReply Attach(LocalConnection& conn, const rpc::Attach& req);
  LocalReply Join(LocalConnection& conn, const rpc::JoinSession& req);
  LocalReply RegisterRegion(LocalConnection& conn, const rpc::RegisterRegion& req, int fd);
  LocalReply UnregisterRegion(LocalConnection& conn, const rpc::UnregisterRegion& req);
  void DropSession(const std::shared_ptr<Session>& session, const char* why);

  // attach_data.cc
  LocalReply Dispatch(LocalConnection& conn, uint16_t method, const std::string& meta);
  LocalReply Put(Session& session, const rpc::LocalPut& req);
  LocalReply Get(Session& session, const rpc::LocalGet& req);
  LocalReply GetPacked(Session& session, const rpc::LocalGet& req);
  LocalReply Query(uint16_t method, const std::string& meta);

  client::HostedClient* const store_;
  const AttachServiceOptions options_;
  SessionTable sessions_;
  AttachCounters counters_;
};

}  // namespace kvpool::node
