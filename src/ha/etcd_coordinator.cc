// Coordinator over etcd (ha/coordinator.h).
#include <fmt/format.h>

#include <mutex>

#include "ha/coordinator.h"
#include "ha/etcd_client.h"

namespace kvpool::ha {
namespace {

class EtcdCoordinator final : public Coordinator {
 public:
  EtcdCoordinator(const EtcdTarget& target, std::chrono::seconds ttl)
      : target_(target), etcd_(target.endpoints), key_(LeaderKey(target.cluster_id)), ttl_(ttl) {}

  Result<CampaignResult> Campaign(std::string_view address, Deadline deadline) override {
    // Look first: a standby polling a live leader grants no lease.
    auto now = Leader(deadline);
    if (!now.ok()) return now.status();
    CampaignResult out;
    if (now->epoch != 0) {
      out.leader = std::move(now).value();
      return out;
    }
    auto lease = etcd_.GrantLease(ttl_, deadline);
    if (!lease.ok()) return lease.status();
    auto created = etcd_.CreateIfAbsent(key_, address, *lease, deadline);
    if (!created.ok() || !created->created) {
      (void)etcd_.RevokeLease(*lease, deadline);  // lost the race (or failed): let it go now
      if (!created.ok()) return created.status();
      out.leader = {created->current.value,
                    static_cast<uint64_t>(created->current.create_revision)};
      return out;
    }
    {
      std::lock_guard lock(mu_);
      lease_ = *lease;
    }
    out.won = true;
    out.leader = {std::string(address), static_cast<uint64_t>(created->current.create_revision)};
    return out;
  }

  Result<bool> Renew(Deadline deadline) override {
    int64_t lease = held();
    if (lease == 0) return false;
    auto ttl = etcd_.KeepAlive(lease, deadline);
    if (!ttl.ok()) return ttl.status();
    return *ttl > 0;
  }

  Status Resign(Deadline deadline) override {
    int64_t lease = held();
    if (lease == 0) return Status::Ok();
    {
      std::lock_guard lock(mu_);
      lease_ = 0;
    }
    return etcd_.RevokeLease(lease, deadline);  // deletes the leader key with it
  }

  Result<LeaderRecord> Leader(Deadline deadline) override {
    auto kv = etcd_.Get(key_, deadline);
    if (!kv.ok()) return kv.status();
    if (!*kv) return LeaderRecord{};
    return LeaderRecord{(*kv)->value, static_cast<uint64_t>((*kv)->create_revision)};
  }

  Status ClearStale(const LeaderRecord& stale, Deadline deadline) override {
    auto kv = etcd_.Get(key_, deadline);
    if (!kv.ok()) return kv.status();
    // Only that record's own lease: a record created since has another lease, left alone.
    if (!*kv || (*kv)->value != stale.address ||
        static_cast<uint64_t>((*kv)->create_revision) != stale.epoch || (*kv)->lease == 0) {
      return Status::Ok();
    }
    return etcd_.RevokeLease((*kv)->lease, deadline);
  }

  std::chrono::seconds lease_ttl() const override { return ttl_; }
  std::string Describe() const override { return target_.ToString(); }

 private:
  int64_t held() const {
    std::lock_guard lock(mu_);
    return lease_;
  }

  const EtcdTarget target_;
  EtcdClient etcd_;
  const std::string key_;
  const std::chrono::seconds ttl_;
  mutable std::mutex mu_;
  int64_t lease_ = 0;  // guarded by mu_: the lease of the leadership won last (0: none)
};

}  // namespace

std::string LeaderKey(std::string_view cluster_id) {
  return fmt::format("kvpool/{}/leader", cluster_id);
}

std::unique_ptr<Coordinator> MakeEtcdCoordinator(const EtcdTarget& target,
                                                 std::chrono::seconds lease_ttl) {
  return std::make_unique<EtcdCoordinator>(target, lease_ttl);
}

}  // namespace kvpool::ha
