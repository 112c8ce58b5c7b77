#include "master/tenant_scope.h"

#include <fmt/format.h>

#include "common/tenant_key.h"

namespace kvpool::master {
namespace {

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  if (from.empty() || from == to) return;
  for (size_t pos = s->find(from); pos != std::string::npos; pos = s->find(from, pos + to.size())) {
    s->replace(pos, from.size(), to);
  }
}

}  // namespace

void KeyScope::Add(std::string* key) {
  user_.push_back(*key);
  Status st = ValidateUserKey(caller_.tenant, *key, caller_.privileged);
  if (!st.ok()) {
    refused_.push_back(st.message());
    key->clear();
  } else {
    refused_.emplace_back();
    // A privileged caller's internal key is already in its final form.
    if (!(caller_.privileged && IsTenantScoped(*key))) *key = MakeTenantKey(caller_.tenant, *key);
  }
  internal_.push_back(*key);
}

void KeyScope::Restore(size_t i, std::string* message) const {
  if (i >= user_.size()) return;
  if (!refused_[i].empty()) {
    *message = refused_[i];
    return;
  }
  ReplaceAll(message, internal_[i], user_[i]);
}

KeyScope ScopeRequest(Caller caller, rpc::PutStart* req) {
  KeyScope scope(caller);
  for (rpc::PutItem& item : *req->mutable_items()) scope.Add(item.mutable_key());
  return scope;
}

KeyScope ScopeRequest(Caller caller, rpc::PutEnd* req) {
  KeyScope scope(caller);
  for (std::string& k : *req->mutable_commit_keys()) scope.Add(&k);
  for (std::string& k : *req->mutable_revoke_keys()) scope.Add(&k);
  return scope;
}

KeyScope ScopeRequest(Caller caller, rpc::KeysRequest* req) {
  KeyScope scope(caller);
  for (std::string& k : *req->mutable_keys()) scope.Add(&k);
  return scope;
}

void Unscope(const KeyScope& scope, rpc::PutStartReply* reply) {
  for (int i = 0; i < reply->results_size(); ++i) {
    scope.Restore(i, reply->mutable_results(i)->mutable_message());
  }
}

void Unscope(const KeyScope& scope, rpc::CodesReply* reply) {
  for (int i = 0; i < reply->messages_size(); ++i) scope.Restore(i, reply->mutable_messages(i));
}

void Unscope(const KeyScope& scope, rpc::GetReplicaListReply* reply) {
  for (int i = 0; i < reply->objects_size(); ++i) {
    scope.Restore(i, reply->mutable_objects(i)->mutable_message());
  }
}

Status CheckMethodAllowed(Caller caller, uint16_t method) {
  if (caller.privileged) return Status::Ok();
  if (method == rpc::MOUNT_SEGMENT || method == rpc::UNMOUNT_SEGMENT ||
      method == rpc::DRAIN_SEGMENT || method == rpc::TIER_UPDATE || method == rpc::PROMOTE) {
    return Status(
        ErrorCode::ILLEGAL_CLIENT,
        fmt::format("tenant '{}' connected with a tenant key may not host segments (method {}): "
                    "a segment holds every tenant's objects. Contribute no memory "
                    "(global_segment_size 0) or use standalone mode",
                    caller.tenant.empty() ? "default" : caller.tenant, method));
  }
  return Status::Ok();
}

void StripPrivilegedFields(Caller caller, rpc::Ping* ping) {
  if (caller.privileged) return;
  ping->clear_journal_acks();
  ping->set_journal_wait_ms(0);
}

}  // namespace kvpool::master
