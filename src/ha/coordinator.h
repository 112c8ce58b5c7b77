// Leadership among a pool's masters, behind one small interface so that another coordination
// service (Kubernetes leases, Redis) can join etcd later (MakeEtcdCoordinator is the only one).
//
// One master leads a cluster at a time, under a lease it keeps renewing; the record of who
// leads (its RPC address) lives in the coordinator under the cluster id. The leadership epoch
// grows with every new leadership (etcd: the creation revision of the leader key), so anyone
// can tell an answer of a newer leader from one of an older.
//
// Threading: implementations are thread-safe. Every call takes a deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/time.h"
#include "ha/etcd_address.h"
#include "kvpool/status.h"

namespace kvpool::ha {

struct LeaderRecord {
  std::string address;  // the leader's RPC address, host:port; empty when nobody leads
  uint64_t epoch = 0;   // 0 when nobody leads
};

struct CampaignResult {
  bool won = false;     // this caller leads now under its lease
  LeaderRecord leader;  // who leads now (this caller when won; nobody after a lost race)
};

class Coordinator {
 public:
  virtual ~Coordinator() = default;
  // One attempt: when nobody leads, takes leadership under a new lease, publishing `address`.
  // Errors: the coordinator's (ETCD_OPERATION_ERROR, RPC_TIMEOUT).
  virtual Result<CampaignResult> Campaign(std::string_view address, Deadline deadline) = 0;
  // Renews the lease of the leadership won last. false: the lease is gone (leadership lost).
  // Errors: the coordinator's (the lease may still hold: the caller keeps its own clock).
  virtual Result<bool> Renew(Deadline deadline) = 0;
  // Gives leadership up now (revokes the lease) so a standby need not wait for it to lapse.
  virtual Status Resign(Deadline deadline) = 0;
  // Who leads now.
  virtual Result<LeaderRecord> Leader(Deadline deadline) = 0;
  // Removes `stale` (revoking its lease) if it is still the leader record: for a record the
  // caller knows leads nothing (its own address while it is a standby: a term it lost, whose
  // lease outlived an outage of the coordinator). A newer record is left alone. OK also when
  // `stale` is gone already.
  virtual Status ClearStale(const LeaderRecord& stale, Deadline deadline) = 0;
  // The lease's time to live.
  virtual std::chrono::seconds lease_ttl() const = 0;
  // "etcd://h1:2379;h2:2379/cluster", for messages.
  virtual std::string Describe() const = 0;
};

// etcd v3 through its JSON gateway (ha/etcd_client.h). The leader key is
// "kvpool/<cluster_id>/leader", its value the leader's address.
std::unique_ptr<Coordinator> MakeEtcdCoordinator(const EtcdTarget& target,
                                                 std::chrono::seconds lease_ttl);

// The etcd key that names the leader of `cluster_id`.
std::string LeaderKey(std::string_view cluster_id);

}  // namespace kvpool::ha
