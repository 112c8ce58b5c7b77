#include "node/node.h"

#include <spdlog/spdlog.h>

#include "common/random_id.h"
#include "common/signals.h"
#include "rpc/endpoint.h"

namespace kvpool::node {

Node::Node(const NodeOptions& options) : options_(options), client_id_(RandomId()) {}

Node::~Node() { Stop(); }

Result<std::unique_ptr<Node>> Node::Start(const NodeOptions& options) {
  std::unique_ptr<Node> node(new Node(options));
  auto master_ep = rpc::ParseEndpoint(options.master_server_address, 50051);
  if (!master_ep.ok()) return master_ep.status();
  node->master_ = std::make_unique<master::MasterClient>(*master_ep, node->client_id_);
  SegmentHostOptions ho;
  ho.bind_host = options.bind_address;
  ho.advertise_host = options.host;
  ho.port = options.port;
  ho.size = options.segment_bytes;
  ho.memory.huge_pages = options.use_hugepage;
  ho.memory.prefault = options.prefault;
  ho.io_threads = options.io_threads;
  auto host = SegmentHost::Start(ho);
  if (!host.ok()) return host.status();
  node->host_ = std::move(host).value();
  node->Mount();
  node->heartbeat_ =
      std::make_unique<Heartbeat>(node->master_.get(), Millis(options.heartbeat_interval_ms),
                                  Millis(options.rpc_timeout_ms), [n = node.get()] { n->Mount(); });
  node->heartbeat_->Start();
  return node;
}

void Node::Mount() {
  Status st = host_->Mount(*master_, DeadlineAfter(Millis(options_.rpc_timeout_ms)));
  if (!st.ok()) {
    spdlog::warn("segment={} not mounted yet: error={} (will retry)", host_->name(), st.ToString());
  }
}

void Node::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (heartbeat_) heartbeat_->Stop();
  Status st = host_->Unmount(*master_, DeadlineAfter(Millis(options_.rpc_timeout_ms)));
  if (st.ok()) {
    spdlog::info("unmounted segment={}", host_->name());
  } else {
    spdlog::warn("unmount of segment={} failed: error={} (the master drops it after its TTL)",
                 host_->name(), st.ToString());
  }
  host_.reset();
}

int RunNode(const NodeOptions& options) {
  auto node = Node::Start(options);
  if (!node.ok()) {
    spdlog::error("kvpool node failed to start: {}", node.status().ToString());
    return 1;
  }
  spdlog::info("kvpool node ready: segment={} master={}", (*node)->segment_name(),
               options.master_server_address);
  int sig = WaitForTerminationSignal();
  spdlog::info("signal {} received: unmounting and stopping", sig);
  (*node)->Stop();
  return 0;
}

}  // namespace kvpool::node
