// The master's half of data-plane grants (rpc/grant.h, docs/security.md): signs a grant into
// every replica location handed to a tenant (non-privileged) connection, READ for
// GET_REPLICA_LIST and WRITE for PUT_START, so that segment hosts serve the tenant those ranges
// and no others. Privileged connections get no grants and cost nothing.
//
// Cost: one HMAC-SHA256 (about 1 µs) per replica. Thread-safe (const methods only).
#pragma once

#include <chrono>
#include <string_view>

#include "master/master_options.h"
#include "rpc/grant.h"
#include "rpc/kvpool.pb.h"

namespace kvpool::master {

class GrantIssuer {
 public:
  // A grant outlives the work it covers (a leased read, a put until it may be discarded) by
  // this much, and is never valid for longer than kMaxValidity. (Segment hosts accept it for
  // rpc::kGrantClockSkew more.)
  static constexpr std::chrono::milliseconds kMargin{5000};
  static constexpr std::chrono::milliseconds kMaxValidity{10 * 60 * 1000};

  // No secret: issues nothing (a pool without a secret has no tenants).
  GrantIssuer() : GrantIssuer("", {}, {}) {}
  // READ grants valid for `read_validity` and WRITE grants for `write_validity` from the time
  // they are signed (each clamped to kMaxValidity).
  GrantIssuer(std::string_view pool_secret, std::chrono::milliseconds read_validity,
              std::chrono::milliseconds write_validity);
  // The master's grants: its secret; READ for the lease TTL + kMargin, WRITE for the put
  // discard timeout + kMargin.
  static GrantIssuer For(const MasterOptions& options);

  bool enabled() const { return !key_.empty(); }
  std::chrono::milliseconds read_validity() const { return read_validity_; }
  std::chrono::milliseconds write_validity() const { return write_validity_; }

  // Signs a WRITE grant into every replica of every result (no-op when !enabled()).
  void Attach(rpc::PutStartReply& reply, uint64_t now_unix_ms) const;
  // Signs a READ grant into every replica of every object (no-op when !enabled()).
  void Attach(rpc::GetReplicaListReply& reply, uint64_t now_unix_ms) const;

 private:
  void Sign(rpc::Replica& replica, rpc::GrantMode mode, uint64_t expiry_ms) const;

  rpc::GrantKey key_;
  std::chrono::milliseconds read_validity_;
  std::chrono::milliseconds write_validity_;
};

}  // namespace kvpool::master
