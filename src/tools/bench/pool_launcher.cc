#include "tools/bench/pool_launcher.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "client/client_security.h"
#include "common/pool_commands.h"
#include "kvpool/client.h"

namespace kvpool::tools::bench {
namespace {

constexpr auto kStartTimeout = std::chrono::seconds(20);

Status Died(ChildProcess& p) {
  return Status(ErrorCode::INTERNAL_ERROR, fmt::format("{} exited (status {}); its log ends:\n{}",
                                                       p.name(), p.exit_status(), p.LogTail()));
}

Status Interrupted() { return Status(ErrorCode::INTERNAL_ERROR, "interrupted"); }

}  // namespace

ChildOptions BenchChildOptions() {
  ChildOptions o;
  o.die_with_parent_thread = true;
  o.own_process_group = true;
  o.stop_grace = std::chrono::seconds(2);
  return o;
}

namespace {

// The security flags a private pool's master and nodes get (the secret by file; a secret from
// the environment reaches them by inheritance).
void AppendSecurityArgs(const rpc::SecurityOptions& s, std::vector<std::string>& args) {
  auto add = [&args](const char* flag, const std::string& value) {
    if (value.empty()) return;
    args.push_back(flag);
    args.push_back(value);
  };
  add("--auth_secret_file", s.auth_secret_file);
  add("--tls_cert", s.tls_cert);
  add("--tls_key", s.tls_key);
  add("--tls_ca", s.tls_ca);
  if (s.tls_verify_client) add("--tls_verify_client", "true");
}

}  // namespace

Result<std::unique_ptr<LocalPool>> LocalPool::Start(const PoolSpec& spec, std::stop_token stop) {
  std::unique_ptr<LocalPool> pool(new LocalPool());
  KVPOOL_RETURN_IF_ERROR(pool->StartMaster(spec, stop));
  KVPOOL_RETURN_IF_ERROR(pool->StartNodes(spec, stop));
  return pool;
}

Status LocalPool::StartMaster(const PoolSpec& spec, std::stop_token stop) {
  master_port_ = FreeLoopbackPort();
  std::vector<std::string> flags = {"--log_level", "warn"};
  AppendSecurityArgs(spec.security, flags);
  auto m = ChildProcess::StartSelf("master", MasterCommandLine(master_port_, flags),
                                   BenchChildOptions());
  if (!m.ok()) return m.status();
  master_ = std::move(m).value();
  auto end = std::chrono::steady_clock::now() + kStartTimeout;
  while (!LoopbackAccepts(master_port_)) {
    if (!master_->Running()) return Died(*master_);
    if (stop.stop_requested()) return Interrupted();
    if (std::chrono::steady_clock::now() >= end) {
      return Status(ErrorCode::RPC_TIMEOUT,
                    fmt::format("master did not listen on 127.0.0.1:{} within 20 s; log:\n{}",
                                master_port_, master_->LogTail()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::Ok();
}

Status LocalPool::StartNodes(const PoolSpec& spec, std::stop_token stop) {
  if (spec.nodes == 0) return Status::Ok();
  for (int i = 0; i < spec.nodes; ++i) {
    uint16_t port = FreeLoopbackPort();
    std::vector<std::string> flags = {"--log_level", "warn"};
    AppendSecurityArgs(spec.security, flags);
    flags.insert(flags.end(), spec.node_flags.begin(), spec.node_flags.end());
    auto n = ChildProcess::StartSelf(
        fmt::format("node {} ({})", i, LoopbackAddress(port)),
        NodeCommandLine(port, master_address(), std::to_string(spec.segment_bytes), flags),
        BenchChildOptions());
    if (!n.ok()) return n.status();
    nodes_.push_back(std::move(n).value());
    node_ports_.push_back(port);
  }
  ClientOptions co;
  co.master_server_address = master_address();
  client::ApplySecurityFlags(spec.security, co);
  auto client = Client::Setup(co);
  if (!client.ok()) return client.status();
  auto end = std::chrono::steady_clock::now() + kStartTimeout;
  for (;;) {
    KVPOOL_RETURN_IF_ERROR(CheckAlive());
    auto s = (*client)->Stat();
    if (s.ok() && s->segments.size() >= static_cast<size_t>(spec.nodes)) break;
    if (stop.stop_requested()) return Interrupted();
    if (std::chrono::steady_clock::now() >= end) {
      return Status(ErrorCode::RPC_TIMEOUT,
                    fmt::format("{} nodes did not all mount their segments within 20 s; "
                                "the last node's log:\n{}",
                                spec.nodes, nodes_.back()->LogTail()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return (*client)->Close();
}

Status LocalPool::WaitResident(uint64_t segment_bytes, std::stop_token stop) {
  const auto resident_by = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (const auto& n : nodes_) {
    while (n->ResidentBytes() < segment_bytes / 100 * 98 &&
           std::chrono::steady_clock::now() < resident_by) {
      KVPOOL_RETURN_IF_ERROR(CheckAlive());
      if (stop.stop_requested()) return Interrupted();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return Status::Ok();
}

Status LocalPool::CheckAlive() {
  if (master_ && !master_->Running()) return Died(*master_);
  for (auto& n : nodes_) {
    if (!n->Running()) return Died(*n);
  }
  return Status::Ok();
}

std::vector<std::string> LocalPool::node_addresses() const {
  std::vector<std::string> out;
  for (uint16_t p : node_ports_) out.push_back(LoopbackAddress(p));
  return out;
}

double LocalPool::CpuSeconds() const {
  double s = master_ ? master_->CpuSeconds() : 0;
  for (const auto& n : nodes_) s += n->CpuSeconds();
  return s;
}

void LocalPool::Stop() {
  for (auto& n : nodes_) n->Stop(std::chrono::seconds(2));
  if (master_) master_->Stop(std::chrono::seconds(2));
}

LocalPool::~LocalPool() { Stop(); }

}  // namespace kvpool::tools::bench
