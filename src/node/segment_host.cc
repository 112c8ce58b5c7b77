#include "node/segment_host.h"

#include <spdlog/spdlog.h>

#include "common/units.h"

namespace kvpool::node {

SegmentHost::SegmentHost(const SegmentHostOptions& options) : size_(options.size) {}

SegmentHost::~SegmentHost() {
  if (server_ != nullptr) server_->Stop();
}

Result<std::unique_ptr<SegmentHost>> SegmentHost::Start(const SegmentHostOptions& options) {
  auto memory = transfer::SegmentMemory::Map(options.size, options.memory);
  if (!memory.ok()) return memory.status();
  std::unique_ptr<SegmentHost> host(new SegmentHost(options));
  rpc::ServerOptions so;
  so.name = "kvpool data";
  so.host = options.bind_host;
  so.port = options.port;
  so.threads = options.io_threads;
  so.security = options.security;
  host->server_ = std::make_unique<rpc::Server>(so, &host->service_);
  KVPOOL_RETURN_IF_ERROR(host->server_->Start());
  host->name_ = options.advertise_host + ":" + std::to_string(host->server_->port());
  std::shared_ptr<transfer::SegmentMemory> mem(std::move(memory).value());
  const void* base = mem->base();
  KVPOOL_RETURN_IF_ERROR(host->table_.Add(host->name_, std::move(mem)));
  // The base address lets an operator (or a fault-injection test) find a replica's bytes in
  // this process's memory (base + the replica's offset).
  spdlog::info("serving segment={} size={} on {}:{} base={}", host->name_, FormatSize(options.size),
               options.bind_host, host->server_->port(), base);
  return host;
}

Status SegmentHost::Mount(master::MasterClient& master, Deadline deadline) {
  auto r = master.MountSegment(name_, name_, size_, deadline);
  if (!r.ok()) return r.status();
  spdlog::info("mounted segment={} size={} at the master", name_, FormatSize(size_));
  return Status::Ok();
}

Status SegmentHost::Unmount(master::MasterClient& master, Deadline deadline) {
  return master.UnmountSegment(name_, deadline);
}

}  // namespace kvpool::node
