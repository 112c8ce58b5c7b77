#include "master/leader_election.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "rpc/kvpool.pb.h"

namespace kvpool::master {
namespace {

int64_t NanosOf(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// What a new leader serves while the nodes re-register: their own traffic, nothing that reads
// or changes keys (the table is not whole yet).
bool NodeTraffic(uint16_t method) {
  switch (method) {
    case rpc::PING:
    case rpc::MOUNT_SEGMENT:
    case rpc::UNMOUNT_SEGMENT:
    case rpc::DRAIN_SEGMENT:
    case rpc::STAT:
      return true;
    default:
      return false;
  }
}

}  // namespace

LeaderElection::LeaderElection(std::unique_ptr<ha::Coordinator> coordinator,
                               ElectionOptions options, std::function<void()> on_lost)
    : coordinator_(std::move(coordinator)),
      options_(options),
      on_lost_(std::move(on_lost)),
      ttl_(coordinator_->lease_ttl()) {}

LeaderElection::~LeaderElection() { Stop(); }

std::string LeaderElection::advertise() const {
  std::lock_guard lock(mu_);
  return advertise_;
}

Status LeaderElection::Start(std::string advertise_address, Deadline deadline) {
  auto leader = coordinator_->Leader(deadline);
  if (!leader.ok()) {
    return Status(leader.code(), fmt::format("cannot reach {}: {}", coordinator_->Describe(),
                                             leader.status().message()));
  }
  {
    std::lock_guard lock(mu_);
    known_ = *leader;
    advertise_ = advertise_address;
  }
  spdlog::info("ha: cluster {} standby at {}; leader now: {}", coordinator_->Describe(),
               advertise_address,
               leader->epoch == 0 ? std::string("none")
               : leader->address == advertise_address
                   ? fmt::format("none (the record of epoch={} names this master, which does "
                                 "not lead: a term it lost; cleared before campaigning)",
                                 leader->epoch)
                   : fmt::format("{} epoch={}", leader->address, leader->epoch));
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void LeaderElection::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (role_.load() == static_cast<int>(Role::kLeader)) {
    serve_until_ns_.store(0);  // stop serving before the lease goes
    Status st = coordinator_->Resign(DeadlineAfter(std::chrono::seconds(1)));
    spdlog::info(
        "ha: resigned leadership epoch={}{}", epoch_.load(),
        st.ok() ? "" : " (revoking the lease failed: a standby takes over when it lapses)");
    role_.store(static_cast<int>(Role::kStandby));
  }
}

bool LeaderElection::Sleep(Clock::duration d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stop_; });
}

bool LeaderElection::Fresh(Clock::time_point now) const {
  return NanosOf(now) < serve_until_ns_.load(std::memory_order_acquire);
}

void LeaderElection::Run() {
  for (;;) {
    if (static_cast<Role>(role_.load()) == Role::kLeader) {
      // A renewal that failed is tried again soon: the lease may still run.
      if (!Sleep(LeaderStep() ? ttl_ / 3 : Clock::duration(std::chrono::milliseconds(100)))) return;
    } else {
      StandbyStep();
    }
    const Role r = static_cast<Role>(role_.load());
    if (r == Role::kLost) return;
    if (r == Role::kStandby && !Sleep(options_.poll_interval)) return;
  }
}

void LeaderElection::StandbyStep() {
  const auto sent = Clock::now();
  const std::string self = advertise();
  auto r = coordinator_->Campaign(self, std::min(sent + ttl_ / 3, sent + std::chrono::seconds(1)));
  if (!r.ok()) {
    std::lock_guard lock(mu_);
    if (last_error_ != r.status().message()) {
      spdlog::warn("ha: campaign in {} failed: {} (retrying every {} ms)", coordinator_->Describe(),
                   r.status().ToString(),
                   std::chrono::duration_cast<Millis>(options_.poll_interval).count());
      last_error_ = r.status().message();
    }
    return;
  }
  if (!r->won && r->leader.epoch != 0 && r->leader.address == self) {
    // A record naming this standby is a term it lost whose lease outlived it (etcd was down
    // when it gave up, and a restarted etcd keeps leases a full TTL more): revoked, so the
    // election need not wait a lease period for it.
    Status cleared = coordinator_->ClearStale(r->leader, sent + std::chrono::seconds(1));
    spdlog::warn(
        "ha: the leader record of {} (epoch={}) names this master, a standby: a term it "
        "lost; {}",
        coordinator_->Describe(), r->leader.epoch,
        cleared.ok()
            ? "revoked its lease"
            : "revoking its lease failed (" + cleared.ToString() + "): it lapses within its TTL");
    std::lock_guard lock(mu_);
    known_ = {};
    return;
  }
  if (r->won) {
    epoch_.store(r->leader.epoch, std::memory_order_release);
    serve_until_ns_.store(NanosOf(sent + ttl_ - options_.fence_margin));
    restore_until_ns_.store(NanosOf(Clock::now() + options_.restore_wait));
    role_.store(static_cast<int>(Role::kLeader));
    spdlog::info(
        "ha: leading cluster {} as {} epoch={}; nodes re-register for {} ms before keys are "
        "served",
        coordinator_->Describe(), self, r->leader.epoch,
        std::chrono::duration_cast<Millis>(options_.restore_wait).count());
  }
  std::lock_guard lock(mu_);
  if (r->leader.epoch != known_.epoch && !r->won) {
    spdlog::info("ha: leader of {} now: {}", coordinator_->Describe(),
                 r->leader.epoch == 0
                     ? std::string("none")
                     : fmt::format("{} epoch={}", r->leader.address, r->leader.epoch));
  }
  known_ = r->leader;
  last_error_.clear();
}

bool LeaderElection::LeaderStep() {
  const auto sent = Clock::now();
  const int64_t until = serve_until_ns_.load();
  if (NanosOf(sent) >= until) {
    Lose(
        "its lease could not be renewed in time (coordinator unreachable, or this process was "
        "paused)");
    return false;
  }
  // Never wait past the time the lease is fresh: then there is nothing left to save.
  Deadline deadline = std::min(sent + ttl_ / 3, Clock::time_point(std::chrono::nanoseconds(until)));
  auto renewed = coordinator_->Renew(deadline);
  if (renewed.ok() && *renewed) {
    serve_until_ns_.store(NanosOf(sent + ttl_ - options_.fence_margin));
    std::lock_guard lock(mu_);
    last_error_.clear();
    return true;
  }
  if (renewed.ok()) {
    Lose("its lease is gone from the coordinator");
    return false;
  }
  std::lock_guard lock(mu_);
  if (last_error_ != renewed.status().message()) {
    spdlog::warn("ha: renewing the lease of epoch={} failed: {} (serving for {} ms more at most)",
                 epoch_.load(), renewed.status().ToString(),
                 std::max<int64_t>(0, (until - NanosOf(Clock::now())) / 1000000));
    last_error_ = renewed.status().message();
  }
  return false;
}

void LeaderElection::Lose(const std::string& why) {
  serve_until_ns_.store(0);
  role_.store(static_cast<int>(Role::kLost));
  spdlog::error("ha: lost leadership of {} (epoch={}): {}; serving nothing more",
                coordinator_->Describe(), epoch_.load(), why);
  // Let the lease go now if the coordinator answers (best effort, short): a standby need not
  // wait for it. When it does not, the next term clears the record (StandbyStep).
  Status revoked = coordinator_->Resign(DeadlineAfter(std::chrono::milliseconds(500)));
  if (revoked.ok()) spdlog::info("ha: revoked the lease of epoch={}", epoch_.load());
  lost_.store(true, std::memory_order_release);
  if (on_lost_) on_lost_();
}

Status LeaderElection::Admit(uint16_t method) const {
  const auto now = Clock::now();
  const Role r = static_cast<Role>(role_.load(std::memory_order_acquire));
  if (r == Role::kLeader && Fresh(now)) {
    if (NanosOf(now) < restore_until_ns_.load(std::memory_order_acquire) && !NodeTraffic(method)) {
      return Status(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                    fmt::format("master {} (leader epoch={}) is rebuilding its table from the "
                                "nodes; retry shortly",
                                advertise(), epoch_.load()));
    }
    return Status::Ok();
  }
  if (r == Role::kLeader || r == Role::kLost) {
    return Status(ErrorCode::NOT_LEADER,
                  fmt::format("master {} lost its leadership (epoch={}) of {}; ask etcd for the "
                              "leader",
                              advertise(), epoch_.load(), coordinator_->Describe()));
  }
  std::lock_guard lock(mu_);
  return Status(
      ErrorCode::NOT_LEADER,
      fmt::format("master {} is a standby of {}; leader: {}", advertise_, coordinator_->Describe(),
                  known_.epoch == 0 ? std::string("none (election under way)")
                                    : fmt::format("{} epoch={}", known_.address, known_.epoch)));
}

HaView LeaderElection::view() const {
  HaView v;
  v.cluster = coordinator_->Describe();
  const Role r = static_cast<Role>(role_.load());
  const auto now = Clock::now();
  if (r == Role::kLeader && Fresh(now)) {
    v.role = NanosOf(now) < restore_until_ns_.load() ? "restoring" : "leader";
    v.epoch = epoch_.load();
    v.leader = advertise();
    return v;
  }
  v.role = r == Role::kStandby ? "standby" : "lost";
  std::lock_guard lock(mu_);
  v.epoch = known_.epoch;
  v.leader = known_.address;
  return v;
}

}  // namespace kvpool::master
