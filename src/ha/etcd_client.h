// The few etcd v3 calls kvpool's master election needs, over etcd's JSON gateway (HTTP POST of
// JSON to /v3/kv/range, /v3/kv/txn, /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke;
// keys and values base64), with the cpp-httplib client. Plain HTTP: bind etcd's client port to
// a trusted network (docs/security.md).
//
// Every call has a deadline and tries the members in turn (starting with the last one that
// answered), each try bounded by a share of the time left, so one dead member costs at most its
// share: the whole answer must arrive within the share (a member trickling bytes is cut off at
// the next read after it; one read waits at most the share) and be at most kMaxAnswerBytes.
// Answers are checked: a field of the wrong type, an int64 that does not parse, bad base64, a
// missing lease id or revision is ETCD_OPERATION_ERROR naming the call and the field.
// Errors: ETCD_OPERATION_ERROR naming each member tried and why (refused, timed out, too big,
// HTTP status, etcd's message, malformed answer); RPC_TIMEOUT when the deadline passed before any
// member answered.
//
// Threading: thread-safe (each call uses its own HTTP connection).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "kvpool/status.h"
#include "rpc/endpoint.h"

namespace kvpool::ha {

struct EtcdKeyValue {
  std::string value;
  int64_t create_revision = 0;  // the revision that created the key (grows with every creation)
  int64_t lease = 0;            // 0: none
};

class EtcdClient {
 public:
  // The largest answer read (the leader record and lease answers are a few hundred bytes).
  static constexpr size_t kMaxAnswerBytes = 64 * 1024;

  // REQUIRES: !members.empty().
  explicit EtcdClient(std::vector<rpc::Endpoint> members);

  // A new lease of `ttl`; its id (never 0).
  Result<int64_t> GrantLease(std::chrono::seconds ttl, Deadline deadline);
  // Renews lease `id` once; the TTL left in seconds, 0 when the lease no longer exists.
  Result<int64_t> KeepAlive(int64_t id, Deadline deadline);
  Status RevokeLease(int64_t id, Deadline deadline);
  // The key's value; nullopt when absent.
  Result<std::optional<EtcdKeyValue>> Get(std::string_view key, Deadline deadline);
  // Puts key=value attached to `lease` only if the key does not exist (one transaction). Returns
  // whether it was created and the key as it is now (ours, or the one that was there).
  struct CreateResult {
    bool created = false;
    EtcdKeyValue current;
  };
  Result<CreateResult> CreateIfAbsent(std::string_view key, std::string_view value, int64_t lease,
                                      Deadline deadline);

  // "h1:2379;h2:2379", for messages.
  std::string MembersString() const;

 private:
  // POSTs `body` (JSON) to `path` at the members in turn; the first 200 answer's body.
  Result<std::string> Post(std::string_view path, const std::string& body, Deadline deadline);

  const std::vector<rpc::Endpoint> members_;
  std::atomic<size_t> preferred_{0};  // the member that answered last
};

}  // namespace kvpool::ha
