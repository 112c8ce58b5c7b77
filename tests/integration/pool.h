// Test support: a whole pool (one master, N nodes) of real processes on 127.0.0.1.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/pool_commands.h"
#include "kvpool/client.h"
#include "process.h"
#include "test_bytes.h"

namespace kvpool::testing {

inline const std::string kBinary = KVPOOL_BINARY;

class Pool {
 public:
  // Starts a master with `master_flags` (on a free port) and waits until it listens.
  explicit Pool(std::vector<std::string> master_flags = {})
      : master_flags_(std::move(master_flags)) {
    for (int attempt = 1;; ++attempt) {
      master_port_ = FreePort();
      if (TryStartMaster()) return;
      if (attempt == kPortAttempts || !LostItsPort(*master_)) break;
    }
    ADD_FAILURE() << "master did not start:\n" << master_->Log();
  }

  // Starts the master again on its port (after KillMaster).
  // (Tests run in parallel: the HTTP admin port is a free one unless the flags name one.)
  void StartMaster() {
    if (!TryStartMaster()) ADD_FAILURE() << "master did not start:\n" << master_->Log();
  }

  // Starts a node serving `size` ("64MB") and waits until its segment is mounted.
  Process& AddNode(const std::string& size, std::vector<std::string> flags = {}) {
    for (int attempt = 1;; ++attempt) {
      const uint16_t port = FreePort();
      std::vector<std::string> args = NodeCommandLine(port, master_address(), size, flags);
      auto node = std::make_unique<Process>(kBinary, args, "node");
      const bool mounted = WaitForSegment(LoopbackAddress(port), node.get());
      if (!mounted && attempt < kPortAttempts && LostItsPort(*node)) continue;
      if (!mounted) ADD_FAILURE() << "node did not mount:\n" << node->Log();
      nodes_.push_back(std::move(node));
      node_ports_.push_back(port);
      node_args_.push_back(std::move(args));
      return *nodes_.back();
    }
  }

  // Starts node `i` again, at once, on its port with its flags (after KillNode(i), or killing
  // it -9 first if it still runs): a new process with new memory under the same segment name.
  // Does not wait; node(i) is the new process.
  Process& RestartNode(size_t i) {
    nodes_[i].reset();
    nodes_[i] = std::make_unique<Process>(kBinary, node_args_[i], "node");
    return *nodes_[i];
  }

  // True once the master lists segment `name` (within 20 s); false at once when `host`, the
  // process expected to mount it, has exited.
  bool WaitForSegment(const std::string& name, Process* host = nullptr) {
    auto c = NewClient();
    if (c == nullptr) return false;
    for (int i = 0; i < 400; ++i) {
      if (host != nullptr && !host->running()) return false;
      auto s = c->Stat();
      if (s.ok() && std::any_of(s->segments.begin(), s->segments.end(),
                                [&](const PoolSegmentStat& seg) { return seg.name == name; })) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // True once the master lists `n` segments (within 20 s).
  bool WaitForSegments(size_t n) {
    auto c = NewClient();
    if (c == nullptr) return false;
    for (int i = 0; i < 400; ++i) {
      auto s = c->Stat();
      if (s.ok() && s->segments.size() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Security settings every client of this pool gets unless it sets its own (the pool's own
  // checks, such as WaitForSegments, use them too). See security_test.cc.
  void SetClientSecurity(ClientOptions security) { security_ = std::move(security); }

  std::unique_ptr<Client> NewClient(ClientOptions o = {}) {
    o.master_server_address = master_address();
    if (o.auth_secret.empty() && o.auth_secret_file.empty()) {
      o.auth_secret = security_.auth_secret;
      o.auth_secret_file = security_.auth_secret_file;
    }
    if (o.tls_ca_file.empty()) {
      o.tls_ca_file = security_.tls_ca_file;
      o.tls_cert_file = security_.tls_cert_file;
      o.tls_key_file = security_.tls_key_file;
    }
    auto c = Client::Setup(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  std::string master_address() const { return LoopbackAddress(master_port_); }
  std::string node_segment(size_t i) const { return LoopbackAddress(node_ports_[i]); }
  Process& master() { return *master_; }
  Process& node(size_t i) { return *nodes_[i]; }
  void KillMaster() { master_.reset(); }
  size_t node_count() const { return nodes_.size(); }
  // SIGKILLs node `i` (kill -9) and reaps it; node(i) must not be used after.
  void KillNode(size_t i) { nodes_[i].reset(); }
  bool node_alive(size_t i) const { return nodes_[i] != nullptr; }

 private:
  // A port is picked free, then bound by the process a moment later; a test running beside this
  // one may take it in between. Such a start is retried on another port, this many times at most.
  static constexpr int kPortAttempts = 3;
  static bool LostItsPort(Process& p) {
    return !p.running() && p.Log().find("Address already in use") != std::string::npos;
  }
  // Starts the master on master_port_; true once it listens (false at once if it exited).
  bool TryStartMaster() {
    master_ = std::make_unique<Process>(kBinary, MasterCommandLine(master_port_, master_flags_),
                                        "master");
    for (int i = 0; i < 1000; ++i) {
      if (!master_->running()) return false;
      if (LoopbackAccepts(master_port_)) return master_->running();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::vector<std::string> master_flags_;
  ClientOptions security_;
  uint16_t master_port_;
  std::unique_ptr<Process> master_;
  std::vector<std::unique_ptr<Process>> nodes_;
  std::vector<uint16_t> node_ports_;
  std::vector<std::vector<std::string>> node_args_;
};

}  // namespace kvpool::testing
