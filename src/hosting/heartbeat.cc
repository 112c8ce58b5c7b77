#include "hosting/heartbeat.h"

#include <spdlog/spdlog.h>

namespace kvpool::hosting {

Heartbeat::Heartbeat(master::MasterClient* master, Clock::duration interval,
                     Clock::duration rpc_timeout, std::function<void()> on_unknown,
                     SegmentHost* host)
    : master_(master),
      interval_(interval),
      rpc_timeout_(rpc_timeout),
      on_unknown_(std::move(on_unknown)),
      host_(host) {}

Heartbeat::~Heartbeat() { Stop(); }

void Heartbeat::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Heartbeat::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Heartbeat::PingOnce() {
  rpc::Ping req;
  Clock::duration wait{0};
  if (host_ != nullptr) {
    wait = std::min<Clock::duration>(kJournalWait, interval_);
    host_->AddJournalAcks(&req);
    req.set_journal_wait_ms(
        static_cast<uint32_t>(std::chrono::duration_cast<Millis>(wait).count()));
  }
  const bool remounted_last = remounted_;
  remounted_ = false;
  auto r = master_->Ping(std::move(req), DeadlineAfter(rpc_timeout_ + wait));
  if (!r.ok()) {
    SetReachable(false, r.status());
    return false;
  }
  SetReachable(true, Status::Ok());
  // A master that does not know us (restarted, or declared us dead), or a segment whose mount
  // failed earlier (e.g. refused while a dead predecessor held its name): mount again.
  if (!r->client_known() || (host_ != nullptr && !host_->mounted())) {
    if (on_unknown_) on_unknown_();
    // Mounted again: the next ping (acknowledging the new master's journal, which calls that
    // replace or remove objects here wait for) follows at once, not an interval later. Not
    // twice in a row, so a master that keeps forgetting us is not pinged in a loop.
    remounted_ = true;
    return host_ != nullptr && host_->mounted() && !remounted_last;
  }
  if (host_ != nullptr) host_->ApplyJournals(*r);
  return host_ != nullptr;
}

void Heartbeat::NoteMasterCall(const Status& st) {
  const bool unanswered = st.code() == ErrorCode::RPC_FAIL || st.code() == ErrorCode::RPC_TIMEOUT;
  SetReachable(!unanswered, st);
}

void Heartbeat::SetReachable(bool reachable, const Status& why) {
  if (reachable) {
    if (!reachable_.exchange(true)) spdlog::info("master reachable again");
  } else if (reachable_.exchange(false)) {
    // A master that answered NOT_LEADER (a standby, or one between terms) was reached: the
    // pool has no leader to serve it yet, which is not the same trouble as a network one.
    const bool answered = why.code() == ErrorCode::NOT_LEADER;
    spdlog::warn(
        "{}: error={} (retrying every {} ms)",
        answered ? "no master leads (the master reached is not the leader)" : "master unreachable",
        why.ToString(), std::chrono::duration_cast<Millis>(interval_).count());
  }
}

void Heartbeat::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    bool again = PingOnce();
    lock.lock();
    if (!again) cv_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

}  // namespace kvpool::hosting
