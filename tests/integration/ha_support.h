// Test support for master high availability: a real etcd (Debian's `etcd`, on free loopback
// ports with its own data directory, removed after), masters with --enable_ha, nodes and clients
// given only the etcd:// address.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/pool_commands.h"
#include "kvpool/client.h"
#include "process.h"
#include "test_bytes.h"

namespace kvpool::testing {

inline const std::string kHaBinary = KVPOOL_BINARY;

// The etcd binary on PATH (or /usr/bin/etcd); "" when not installed.
inline std::string FindEtcd() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "";
  dirs += ":/usr/bin:/usr/local/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(begin, end - begin) + "/etcd";
    if (end > begin && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return "";
}

// A one-member etcd on 127.0.0.1, data in a fresh temp directory (removed by the destructor).
class Etcd {
 public:
  explicit Etcd(const std::string& binary) : binary_(binary) {
    char dir[] = "/tmp/kvpool-etcd-XXXXXX";
    dir_ = ::mkdtemp(dir) != nullptr ? dir : "";
    client_port_ = FreePort();
    peer_port_ = FreePort();
    Start();
  }
  ~Etcd() {
    process_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  void Start() {
    const std::string client = "http://127.0.0.1:" + std::to_string(client_port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    process_ = std::make_unique<Process>(
        binary_,
        std::vector<std::string>{"--name", "t", "--data-dir", dir_ + "/data",
                                 "--listen-client-urls", client, "--advertise-client-urls", client,
                                 "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                 "--initial-cluster", "t=" + peer, "--log-level", "warn"},
        "etcd");
    if (!WaitForPort(client_port_, std::chrono::seconds(20))) {
      ADD_FAILURE() << "etcd did not start:\n" << process_->Log();
    }
  }
  void Kill() { process_.reset(); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }

 private:
  std::string binary_;
  std::string dir_;
  uint16_t client_port_ = 0;
  uint16_t peer_port_ = 0;
  std::unique_ptr<Process> process_;
};

// What a master's /health says.
struct Health {
  std::string role;  // "" when it did not answer
  std::string leader;
  uint64_t epoch = 0;
};

inline std::string Field(const std::string& text, const std::string& name) {
  size_t at = text.find(name + "=");
  if (at == std::string::npos) return "";
  at += name.size() + 1;
  size_t end = text.find_first_of(" \n", at);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

inline Health HealthOf(uint16_t http_port) {
  httplib::Client c("127.0.0.1", http_port);
  c.set_connection_timeout(std::chrono::milliseconds(300));
  c.set_read_timeout(std::chrono::milliseconds(500));
  auto res = c.Get("/health");
  Health h;
  if (!res || res->status != 200) return h;
  h.role = Field(res->body, "role");
  h.leader = Field(res->body, "leader");
  h.epoch = std::strtoull(Field(res->body, "epoch").c_str(), nullptr, 10);
  return h;
}

// An etcd, `masters` HA masters of one cluster, nodes and clients that know only etcd://.
class HaPool {
 public:
  HaPool(const std::string& etcd_binary, size_t masters) : etcd_(etcd_binary) {
    cluster_ = "t" + std::to_string(std::random_device{}() % 1000000);
    for (size_t i = 0; i < masters; ++i) {
      rpc_ports_.push_back(FreePort());
      http_ports_.push_back(FreePort());
      masters_.emplace_back();
    }
    for (size_t i = 0; i < masters; ++i) StartMaster(i);
  }

  std::vector<std::string> MasterArgs(size_t i) const {
    return MasterCommandLine(
        rpc_ports_[i], {"--metrics_port", std::to_string(http_ports_[i]), "--enable_ha", "true",
                        "--etcd_endpoints", etcd_.endpoint(), "--cluster_id", cluster_,
                        "--ha_backend_type", "etcd", "--ha_lease_ttl_sec", "2",
                        "--ha_restore_wait_ms", "1500", "--eviction_ratio", "0"});
  }
  // Starts master `i` (again) and waits until its admin port answers.
  void StartMaster(size_t i) {
    masters_[i] = std::make_unique<Process>(kHaBinary, MasterArgs(i), "master");
    if (!WaitForPort(http_ports_[i], std::chrono::seconds(20))) {
      ADD_FAILURE() << "master did not start:\n" << masters_[i]->Log();
    }
  }
  void KillMaster(size_t i) { masters_[i].reset(); }  // SIGKILL
  Process* master(size_t i) { return masters_[i].get(); }
  size_t master_count() const { return masters_.size(); }
  uint16_t rpc_port(size_t i) const { return rpc_ports_[i]; }
  Health health(size_t i) const { return HealthOf(http_ports_[i]); }
  // Master i's /metrics text ("" when it does not answer).
  std::string metrics(size_t i) const {
    httplib::Client c("127.0.0.1", http_ports_[i]);
    c.set_connection_timeout(std::chrono::milliseconds(300));
    c.set_read_timeout(std::chrono::milliseconds(1000));
    auto res = c.Get("/metrics");
    return res && res->status == 200 ? res->body : "";
  }

  // The index of the master that leads and serves keys (role=leader), waiting up to `timeout`;
  // nullopt if none did. `except`: a master not to count (one just killed or paused).
  std::optional<size_t> WaitForLeader(std::chrono::milliseconds timeout,
                                      std::optional<size_t> except = std::nullopt) const {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      for (size_t i = 0; i < masters_.size(); ++i) {
        if (masters_[i] == nullptr || (except && *except == i)) continue;
        if (health(i).role == "leader") return i;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::nullopt;
  }
  // The index of a master leading with an epoch above `old_epoch` (within `timeout`).
  std::optional<size_t> WaitForNewLeader(uint64_t old_epoch,
                                         std::chrono::milliseconds timeout) const {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      for (size_t i = 0; i < masters_.size(); ++i) {
        if (masters_[i] == nullptr) continue;
        Health h = health(i);
        if (h.role == "leader" && h.epoch > old_epoch) return i;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::nullopt;
  }
  size_t CountRole(const std::string& role) const {
    size_t n = 0;
    for (size_t i = 0; i < masters_.size(); ++i) {
      if (masters_[i] != nullptr && health(i).role == role) ++n;
    }
    return n;
  }

  std::string etcd_address() const { return "etcd://" + etcd_.endpoint() + "/" + cluster_; }
  Etcd& etcd() { return etcd_; }

  Process& AddNode(const std::string& size) {
    uint16_t port = FreePort();
    nodes_.push_back(
        std::make_unique<Process>(kHaBinary, NodeCommandLine(port, etcd_address(), size), "node"));
    return *nodes_.back();
  }

  std::unique_ptr<Client> NewClient(ClientOptions o = {}) {
    o.master_server_address = etcd_address();
    auto c = Client::Setup(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // True once the leader lists `n` segments (within `timeout`).
  bool WaitForSegments(Client& c, size_t n, std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      auto s = c.Stat();
      if (s.ok() && s->segments.size() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::string Logs() const {
    std::string out;
    for (size_t i = 0; i < masters_.size(); ++i) {
      if (masters_[i] != nullptr)
        out += "--- master " + std::to_string(i) + "\n" + masters_[i]->Log();
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      out += "--- node " + std::to_string(i) + "\n" + nodes_[i]->Log();
    }
    return out;
  }

 private:
  Etcd etcd_;
  std::string cluster_;
  std::vector<uint16_t> rpc_ports_;
  std::vector<uint16_t> http_ports_;
  std::vector<std::unique_ptr<Process>> masters_;
  std::vector<std::unique_ptr<Process>> nodes_;
};

// Skips the test (with the reason) when etcd is not installed; CI installs it
// (scripts/install-deps.sh).
#define KVPOOL_REQUIRE_ETCD(var)                                                          \
  const std::string var = FindEtcd();                                                     \
  if (var.empty()) {                                                                      \
    GTEST_SKIP() << "etcd is not installed (apt-get install etcd-server etcd-client, as " \
                    "scripts/install-deps.sh does): master HA tests need a real etcd";    \
  }

}  // namespace kvpool::testing
