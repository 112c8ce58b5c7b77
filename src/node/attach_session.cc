#include "node/attach_session.h"

#include <sys/socket.h>

#include "common/random_id.h"

namespace kvpool::node {

void ConnectionHandle::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

void ConnectionHandle::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  fd_.reset();
}

bool Session::AddRegion(uint64_t id, std::shared_ptr<MappedRegion> region,
                        std::shared_ptr<MappedRegion>* replaced) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dropped_) return false;
  *replaced = std::exchange(regions_[id], std::move(region));
  return true;
}

std::shared_ptr<MappedRegion> Session::RemoveRegion(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(id);
  if (it == regions_.end()) return nullptr;
  auto region = std::move(it->second);
  regions_.erase(it);
  return region;
}

std::shared_ptr<MappedRegion> Session::FindRegion(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(id);
  return it == regions_.end() ? nullptr : it->second;
}

bool Session::AddConnection(const std::shared_ptr<ConnectionHandle>& conn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dropped_) return false;
  connections_.insert(conn);
  return true;
}

void Session::RemoveConnection(const std::shared_ptr<ConnectionHandle>& conn) {
  std::lock_guard<std::mutex> lock(mu_);
  connections_.erase(conn);
}

void Session::Touch() {
  std::lock_guard<std::mutex> lock(mu_);
  last_seen_ = Clock::now();
}

Clock::time_point Session::last_seen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_seen_;
}

bool Session::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

std::vector<std::shared_ptr<MappedRegion>> Session::Drop() {
  std::lock_guard<std::mutex> lock(mu_);
  dropped_ = true;
  for (const auto& c : connections_) c->Shutdown();
  connections_.clear();
  std::vector<std::shared_ptr<MappedRegion>> out;
  for (auto& [id, r] : regions_) out.push_back(std::move(r));
  regions_.clear();
  return out;
}

size_t Session::region_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return regions_.size();
}

uint64_t Session::mapped_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [id, r] : regions_) n += r->size();
  return n;
}

std::shared_ptr<Session> SessionTable::Create(SessionInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  info.id = next_id_++;
  info.token = RandomU64();
  auto s = std::make_shared<Session>(std::move(info));
  sessions_[s->info().id] = s;
  return s;
}

std::shared_ptr<Session> SessionTable::Find(uint64_t id, uint64_t token) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->info().token != token) return nullptr;
  return it->second;
}

std::shared_ptr<Session> SessionTable::Remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  auto s = std::move(it->second);
  sessions_.erase(it);
  return s;
}

std::vector<std::shared_ptr<Session>> SessionTable::RemoveSilent(Clock::duration ttl) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Session>> out;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second->last_seen() > ttl) {
      out.push_back(std::move(it->second));
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::vector<std::shared_ptr<Session>> SessionTable::RemoveAll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Session>> out;
  for (auto& [id, s] : sessions_) out.push_back(std::move(s));
  sessions_.clear();
  return out;
}

std::vector<std::shared_ptr<Session>> SessionTable::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Session>> out;
  for (const auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

}  // namespace kvpool::node
