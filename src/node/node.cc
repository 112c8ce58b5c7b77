#include "node/node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "client/client_security.h"
#include "common/signals.h"
#include "common/units.h"

namespace kvpool::node {

Result<std::unique_ptr<Node>> Node::Start(const NodeOptions& options) {
  std::unique_ptr<Node> node(new Node(options));
  node->start_unix_seconds_ =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  ClientOptions co = options.client;
  client::ApplySecurityFlags(options.security, co);
  client::HostingOptions ho;
  ho.bind_host = options.bind_address;
  ho.insecure_hint = "start the node with --insecure";
  ho.prefault = options.prefault && !options.prefault_in_background;  // before the mount below
  ho.prefault_in_background = options.prefault && options.prefault_in_background;
  ho.transparent_huge_pages = options.transparent_hugepage;
  ho.io_threads = options.io_threads;
  // An attached engine's large batch is copied by this many threads at once (the caller's too).
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ho.transfer_threads =
      (options.local_copy_threads > 0 ? options.local_copy_threads : std::min(8, cores)) - 1;
  ho.require_master = false;  // start order does not matter: the heartbeat mounts later
  ho.mount_at_init = false;   // mounted below, once the attach socket listens
  node->store_ = client::MakeHostedClient(co, ho);
  KVPOOL_RETURN_IF_ERROR(node->store_->Init());
  node->segment_name_ = node->store_->SegmentName();

  AttachServiceOptions so;
  so.client_ttl = Millis(options.local_client_ttl_ms);
  if (options.security.auth_secret.empty() && !options.security.tls_client()) {
    so.direct_master_address = options.client.master_server_address;
  }
  node->attach_service_ = std::make_unique<AttachService>(node->store_.get(), so);
  AttachServerOptions ao;
  node->local_socket_ = LocalSocketName(node->store_->SegmentPort());
  ao.socket_names.push_back(node->local_socket_);
  if (!options.local_socket_path.empty()) ao.socket_names.push_back(options.local_socket_path);
  ao.metrics = &node->metrics_;
  node->attach_server_ = std::make_unique<AttachServer>(ao, node->attach_service_.get());
  KVPOOL_RETURN_IF_ERROR(node->attach_server_->Start());
  node->store_->MountSegmentNow();
  node->mount_asked_ = true;

  if (options.enable_http_admin) {
    Node* self = node.get();
    node->admin_ = std::make_unique<NodeAdmin>(&node->metrics_, [self] { return self->Gauges(); });
    HttpHandlers handlers;
    handlers.get = [admin = node->admin_.get()](std::string_view path, const HttpParams& params) {
      return admin->Get(path, params);
    };
    node->http_ = std::make_unique<HttpServer>("node http admin", options.bind_address,
                                               static_cast<uint16_t>(options.metrics_port),
                                               std::move(handlers));
    KVPOOL_RETURN_IF_ERROR(node->http_->Start());
  }
  return node;
}

Node::~Node() { Stop(); }

NodeGauges Node::Gauges() const {
  NodeGauges g;
  g.segment_name = segment_name_;
  g.segment_bytes = options_.client.global_segment_size;
  g.master_reachable = store_->MasterReachable();
  g.start_unix_seconds = start_unix_seconds_;
  g.attach = attach_service_->NodeStatus();
  g.data = store_->DataCounters();
  g.disk = store_->DiskStats();
  return g;
}

void Node::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (http_) http_->Stop();  // its handlers read the parts stopped below
  // Drain first: from now on no put places a new replica here, while reads of what is stored
  // go on until the unmount. A start that failed before the mount has nothing to drain.
  if (store_ && mount_asked_) {
    Status drained = store_->DrainOwnSegment();
    if (drained.ok()) {
      spdlog::info("segment={} draining: no new replicas", segment_name_);
      if (options_.drain_copy_ms > 0) {
        auto r = store_->CopySoleReplicasAway(DeadlineAfter(Millis(options_.drain_copy_ms)));
        spdlog::info(
            "segment={} drain copy: copied={} already_elsewhere={} failed={} "
            "not_tried={}",
            segment_name_, r.copied, r.skipped, r.failed, r.not_tried);
      }
    } else {
      spdlog::warn("segment={} drain request failed: {} (unmounting anyway)", segment_name_,
                   drained.ToString());
    }
  }
  // Clients first: their in-flight calls finish before the store they use goes away.
  if (attach_server_) attach_server_->Stop();
  if (attach_service_) {
    attach_service_->DropAll();
    const auto& c = attach_service_->counters();
    spdlog::info(
        "standalone clients: {} attached since start, {} through the copying path, {} "
        "zero-copy",
        c.sessions_attached.load(), FormatSize(c.copied_bytes.load()),
        FormatSize(c.zero_copy_bytes.load()));
  }
  if (store_) (void)store_->Close();  // unmounts (logs "unmounted segment=...")
}

int RunNode(const NodeOptions& options) {
  auto node = Node::Start(options);
  if (!node.ok()) {
    spdlog::error("kvpool node failed to start: {}", node.status().ToString());
    return 1;
  }
  spdlog::info("kvpool node ready: segment={} master={} local={}", (*node)->segment_name(),
               options.client.master_server_address, (*node)->local_socket());
  if (options.host_was_detected) {
    spdlog::info(
        "announced as {}: this host's address toward the master (--host overrides, "
        "e.g. behind NAT or with several NICs); listening on {}",
        options.client.local_hostname, options.bind_address);
  }
  if ((*node)->http_port() != 0) {
    spdlog::info("kvpool node http admin on {}:{} (/metrics /health /status)", options.bind_address,
                 (*node)->http_port());
  }
  int sig = WaitForTerminationSignal();
  spdlog::info("signal {} received: unmounting and stopping", sig);
  (*node)->Stop();
  return 0;
}

}  // namespace kvpool::node
