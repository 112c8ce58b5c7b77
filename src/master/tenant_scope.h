// Tenant namespaces on the master (docs/security.md, "Tenants"): rewrites the keys of a request
// from a connection bound to a tenant into their internal form (common/tenant_key.h) before
// MasterCore sees them, and the per-key messages of the reply back to the user's keys, so the
// core stores every tenant's objects in one table without knowing about tenants.
//
// A key the caller may not use (a leading NUL from a non-privileged connection, or too long
// once prefixed) is handed to the core as "" (which refuses it per key with INVALID_KEY) and its
// message is replaced by the reason. Privileged connections may send internal keys as they are
// (nodes restoring or draining their segments).
//
// Threading: a KeyScope belongs to one request; functions are stateless.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kvpool/status.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::master {

// Who sends a request, as the handshake established it (rpc::ConnectionContext).
struct Caller {
  std::string_view tenant;  // normalized: "" is the default tenant
  bool privileged = true;   // proved the pool secret (or the server has none)
  // The peer's "ip:port" when it connected from a non-loopback address (another host, or this
  // one through a network interface); empty for a loopback peer and in-process calls.
  std::string_view network_peer;
  // False for a privileged default-tenant caller, whose keys pass unchanged.
  bool scoped() const { return !tenant.empty() || !privileged; }
};

class KeyScope {
 public:
  explicit KeyScope(Caller caller) : caller_(caller) {}
  // Rewrites one user key in place (the next index).
  void Add(std::string* key);
  // Puts the user's key back into the message of key `i` and the reason into a refused key's.
  void Restore(size_t i, std::string* message) const;
  size_t size() const { return user_.size(); }

 private:
  Caller caller_;
  std::vector<std::string> user_;      // the keys as the caller sent them
  std::vector<std::string> internal_;  // as handed to the core ("" when refused)
  std::vector<std::string> refused_;   // the reason, or "" when accepted
};

// Rewrite a request's keys (in reply order) into the caller's namespace.
KeyScope ScopeRequest(Caller caller, rpc::PutStart* req);
KeyScope ScopeRequest(Caller caller, rpc::PutEnd* req);
KeyScope ScopeRequest(Caller caller, rpc::KeysRequest* req);

// Restore the user's keys in a reply's per-key messages.
void Unscope(const KeyScope& scope, rpc::PutStartReply* reply);
void Unscope(const KeyScope& scope, rpc::CodesReply* reply);
void Unscope(const KeyScope& scope, rpc::GetReplicaListReply* reply);
inline void Unscope(const KeyScope&, rpc::ExistsPrefixReply*) {}
template <typename T>
void Unscope(const KeyScope& scope, Result<T>* result) {
  if (result->ok()) Unscope(scope, &result->value());
}

// Methods a non-privileged caller may not use at all (segment hosting: MOUNT_SEGMENT,
// UNMOUNT_SEGMENT, DRAIN_SEGMENT); ILLEGAL_CLIENT naming the tenant. OK otherwise.
Status CheckMethodAllowed(Caller caller, uint16_t method);

// A non-privileged ping carries no journal acks (journals hold every tenant's keys).
void StripPrivilegedFields(Caller caller, rpc::Ping* ping);

}  // namespace kvpool::master
