#include "node/node_metrics.h"

#include <fmt/format.h>

#include <string_view>

namespace kvpool::node {
namespace {

// The `method` label of each slot (method number - 60; the last is anything else).
constexpr std::array<std::string_view, 15> kLocalMethodNames = {"attach",
                                                                "join_session",
                                                                "register_region",
                                                                "unregister_region",
                                                                "heartbeat",
                                                                "put",
                                                                "get",
                                                                "exists",
                                                                "exists_prefix",
                                                                "get_size",
                                                                "remove",
                                                                "remove_all",
                                                                "stat",
                                                                "node_status",
                                                                "other"};

}  // namespace

size_t NodeMetrics::SlotOf(uint16_t method) {
  if (method < kFirstMethod || method >= kFirstMethod + kMethods - 1) return kMethods - 1;
  return method - kFirstMethod;
}

void NodeMetrics::RecordLocal(uint16_t method, ErrorCode code, uint64_t nanos) {
  PerMethod& m = methods_[SlotOf(method)];
  m.requests.Add();
  m.latency.ObserveNanos(nanos);
  if (code != ErrorCode::OK) m.errors.Add(static_cast<int32_t>(code));
}

uint64_t NodeMetrics::local_requests(uint16_t method) const {
  return methods_[SlotOf(method)].requests.value();
}

uint64_t NodeMetrics::local_errors(uint16_t method, ErrorCode code) const {
  return methods_[SlotOf(method)].errors.Count(static_cast<int32_t>(code));
}

namespace {

// The disk tier's metrics (docs/operations.md, "Disk tier").
void RenderDisk(metrics::TextWriter& w, const hosting::DiskHostStats& d) {
  const metrics::Label disk{"tier", "disk"};
  w.Sample("kvpool_node_tier_capacity_bytes", {disk}, d.tier.capacity);
  w.WriteGauge("kvpool_node_disk_used_bytes", "Bytes of the disk tier holding objects.",
               static_cast<double>(d.tier.used));
  w.WriteGauge("kvpool_node_disk_objects", "Objects on the disk tier.",
               static_cast<double>(d.tier.objects));
  w.WriteGauge("kvpool_node_disk_direct_io",
               "1 when the disk tier uses O_DIRECT, 0 when the file system refused it.",
               d.tier.direct_io ? 1.0 : 0.0);
  w.WriteGauge("kvpool_node_disk_offload_queue_depth",
               "Objects committed to DRAM waiting to be copied to disk.",
               static_cast<double>(d.offload_queue_depth));
  w.Family("kvpool_node_disk_offload_total", "counter",
           "Objects the offloader handled, by outcome: offloaded (on disk, listed by the "
           "master), skipped (no checksum, or the bytes changed first), dropped (queue full), "
           "failed (no room, I/O error, refused).");
  w.Sample("kvpool_node_disk_offload_total", {{"outcome", "offloaded"}}, d.offloaded);
  w.Sample("kvpool_node_disk_offload_total", {{"outcome", "skipped"}}, d.offload_skipped);
  w.Sample("kvpool_node_disk_offload_total", {{"outcome", "dropped"}}, d.offload_dropped);
  w.Sample("kvpool_node_disk_offload_total", {{"outcome", "failed"}}, d.offload_failed);
  w.WriteCounter("kvpool_node_disk_evicted_total",
                 "Objects the disk tier evicted (least recently used) to make room.", d.evicted);
  w.WriteCounter("kvpool_node_disk_hits_total",
                 "READ requests served from the disk tier (failed ones included).",
                 d.read_requests);
  w.WriteCounter("kvpool_node_disk_direct_reads_total",
                 "READ requests of this process's own clients read from disk straight into their "
                 "memory (standalone engines' pages), with no copy.",
                 d.direct_reads);
  w.WriteCounter("kvpool_node_disk_read_failures_total",
                 "READ requests of the disk tier that failed (checksum, I/O error, unknown range).",
                 d.read_failures);
  w.WriteCounter("kvpool_node_disk_unreadable_dropped_total",
                 "Objects unlisted from the disk tier because they failed a second read (I/O "
                 "error, checksum).",
                 d.dropped_unreadable);
  w.Family("kvpool_node_disk_promotions_total", "counter",
           "Objects read from disk often enough to be copied back to DRAM, by outcome: promoted "
           "(listed in DRAM by the master) or failed (no DRAM room, I/O error, refused).");
  w.Sample("kvpool_node_disk_promotions_total", {{"outcome", "promoted"}}, d.promoted);
  w.Sample("kvpool_node_disk_promotions_total", {{"outcome", "failed"}}, d.promote_failed);
  w.Family("kvpool_node_disk_io_bytes_total", "counter",
           "Object bytes read from / written to disk.");
  w.Sample("kvpool_node_disk_io_bytes_total", {{"op", "read"}}, d.tier.bytes_read);
  w.Sample("kvpool_node_disk_io_bytes_total", {{"op", "write"}}, d.tier.bytes_written);
  w.Family("kvpool_node_disk_io_seconds_total", "counter",
           "Time spent in disk I/O batches (io_uring, fdatasync, index appends).");
  w.Sample("kvpool_node_disk_io_seconds_total", {{"op", "read"}},
           static_cast<double>(d.tier.read_ns) / 1e9);
  w.Sample("kvpool_node_disk_io_seconds_total", {{"op", "write"}},
           static_cast<double>(d.tier.write_ns) / 1e9);
  w.WriteCounter("kvpool_node_disk_checksum_failures_total",
                 "Objects read from disk that failed their checksum (torn or flipped; not served).",
                 d.tier.checksum_failures);
  w.WriteCounter("kvpool_node_disk_io_errors_total",
                 "Disk I/O errors (the first is logged with the path; the node keeps serving).",
                 d.tier.io_errors);
  w.WriteCounter("kvpool_node_disk_no_space_total",
                 "Objects the disk tier had no room for before evicting.", d.tier.no_space);
}

}  // namespace

std::string NodeMetrics::Render(const NodeGauges& g) const {
  metrics::TextWriter w;
  const metrics::Label seg{"segment", g.segment_name};
  w.Family("kvpool_node_info", "gauge", "Constant 1, labelled with the node's segment name.");
  w.Sample("kvpool_node_info", {seg}, uint64_t{1});
  w.WriteGauge("kvpool_node_start_time_seconds", "When the node started, in Unix seconds.",
               g.start_unix_seconds);
  w.WriteGauge("kvpool_node_segment_capacity_bytes", "Bytes of DRAM the node's segment serves.",
               static_cast<double>(g.segment_bytes));
  w.WriteGauge("kvpool_node_master_reachable",
               "1 while the master answers the node's heartbeat, else 0.",
               g.master_reachable ? 1.0 : 0.0);

  if (g.data != nullptr) {
    const transfer::DataServiceCounters& d = *g.data;
    w.Family("kvpool_node_data_requests_total", "counter",
             "WRITE and READ requests received on the TCP data port (refused ones included).");
    w.Sample("kvpool_node_data_requests_total", {{"op", "write"}}, d.writes.load());
    w.Sample("kvpool_node_data_requests_total", {{"op", "read"}}, d.reads.load());
    w.Family("kvpool_node_data_bytes_total", "counter",
             "Page bytes written into / read out of the segment over TCP.");
    w.Sample("kvpool_node_data_bytes_total", {{"op", "write"}}, d.bytes_written.load());
    w.Sample("kvpool_node_data_bytes_total", {{"op", "read"}}, d.bytes_read.load());
    w.WriteCounter("kvpool_node_data_requests_refused_total",
                   "Data requests refused before any byte moved (unknown segment, range outside "
                   "it, malformed request).",
                   d.requests_refused.load());
    w.WriteCounter("kvpool_node_data_grants_refused_total",
                   "Tenant data requests refused for a missing, expired or invalid grant "
                   "(docs/security.md); also counted in kvpool_node_data_requests_refused_total.",
                   d.grants_refused.load());
    w.WriteCounter("kvpool_node_data_zero_copy_sends_total",
                   "READ reply sends made zero-copy (MSG_ZEROCOPY; --zero_copy_send_min_bytes).",
                   d.zero_copy.sends.load());
    w.WriteCounter("kvpool_node_data_zero_copy_off_total",
                   "Data connections that stopped sending zero-copy because the kernel copied "
                   "anyway (loopback, veth, a NIC without scatter-gather).",
                   d.zero_copy.copied_off.load());
  }

  w.Family("kvpool_node_tier_capacity_bytes", "gauge",
           "Bytes each tier of the node holds at most (dram: the segment; disk: --disk_size).");
  w.Sample("kvpool_node_tier_capacity_bytes", {{"tier", "dram"}}, g.segment_bytes);
  if (g.disk) RenderDisk(w, *g.disk);

  const rpc::NodeStatusReply& a = g.attach;
  w.WriteGauge("kvpool_node_local_clients", "Standalone clients attached now.",
               static_cast<double>(a.sessions()));
  w.WriteGauge("kvpool_node_local_regions", "Client memory regions mapped now.",
               static_cast<double>(a.regions()));
  w.WriteGauge("kvpool_node_local_mapped_bytes", "Bytes of client memory mapped now.",
               static_cast<double>(a.mapped_bytes()));
  w.WriteCounter("kvpool_node_local_clients_dropped_total",
                 "Standalone sessions ended by disconnect or silence past --local_client_ttl_ms.",
                 a.sessions_dropped());
  w.WriteCounter("kvpool_node_local_copied_bytes_total",
                 "Bytes moved through clients' staging buffers: the copying fallback, used when "
                 "a client's pages are not shared memory.",
                 a.copied_bytes());
  w.WriteCounter("kvpool_node_local_zero_copy_bytes_total",
                 "Bytes moved straight between the segment and clients' shared pages.",
                 a.zero_copy_bytes());

  w.Family("kvpool_node_local_requests_total", "counter",
           "Requests of standalone clients over the local socket, by method.");
  for (size_t i = 0; i < kMethods; ++i) {
    w.Sample("kvpool_node_local_requests_total", {{"method", kLocalMethodNames[i]}},
             methods_[i].requests.value());
  }
  w.Family("kvpool_node_local_errors_total", "counter",
           "Requests of standalone clients answered with an error, by method and code (per-key "
           "failures inside a batch that was served are not counted here).");
  for (size_t i = 0; i < kMethods; ++i) {
    methods_[i].errors.ForEach([&](int32_t code, uint64_t count) {
      std::string name = ErrorCodeName(static_cast<ErrorCode>(code));
      w.Sample("kvpool_node_local_errors_total", {{"method", kLocalMethodNames[i]}, {"code", name}},
               count);
    });
  }
  w.Family("kvpool_node_local_request_duration_seconds", "histogram",
           "Time the node spent on one request of a standalone client (the whole batch, copies "
           "included), by method.");
  for (size_t i = 0; i < kMethods; ++i) {
    w.Histogram("kvpool_node_local_request_duration_seconds", {{"method", kLocalMethodNames[i]}},
                methods_[i].latency.Take());
  }
  return w.Take();
}

}  // namespace kvpool::node
