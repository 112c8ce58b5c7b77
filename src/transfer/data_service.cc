#include "transfer/data_service.h"

#include <endian.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

#include "common/keys.h"
#include "transfer/read_trailer.h"

namespace kvpool::transfer {

asio::awaitable<rpc::Reply> DataService::Handle(const rpc::FrameHeader& header,
                                                std::string_view meta,
                                                rpc::PayloadReader& payload) {
  co_return co_await HandleFrom(rpc::ConnectionContext(), header, meta, payload);
}

asio::awaitable<rpc::Reply> DataService::HandleFrom(const rpc::ConnectionContext& context,
                                                    const rpc::FrameHeader& header,
                                                    std::string_view meta,
                                                    rpc::PayloadReader& payload) {
  rpc::DataRequest req;
  if (header.method != rpc::WRITE && header.method != rpc::READ) {
    co_return rpc::Reply::Error(
        Status(ErrorCode::NOT_SUPPORTED,
               fmt::format("method {} is not served by a storage node", header.method)));
  }
  const bool write = header.method == rpc::WRITE;
  auto& received = write ? counters_.writes : counters_.reads;
  received.fetch_add(1, std::memory_order_relaxed);
  if (!req.ParseFromArray(meta.data(), static_cast<int>(meta.size()))) {
    ++counters_.requests_refused;
    co_return rpc::Reply::Error(Status(ErrorCode::INVALID_PARAMS, "unparsable DataRequest"));
  }
  if (!context.privileged) {
    // Before anything else: a refused tenant learns nothing about the segment. The server
    // discards a refused WRITE's unread payload.
    Status st = CheckTenant(context, req, write ? rpc::GrantMode::kWrite : rpc::GrantMode::kRead);
    if (!st.ok()) co_return rpc::Reply::Error(st);
  }
  if (write) co_return co_await Write(req, payload, context.privileged);
  if (payload.size() != 0) {
    ++counters_.requests_refused;
    co_return rpc::Reply::Error(Status(ErrorCode::INVALID_PARAMS, "READ carries a payload"));
  }
  co_return Read(req);
}

Status DataService::CheckTenant(const rpc::ConnectionContext& context, const rpc::DataRequest& req,
                                rpc::GrantMode mode) {
  Status st = grants_.CheckRequest(req, mode, unix_ms_());
  if (st.ok()) return st;
  ++counters_.requests_refused;
  ++counters_.grants_refused;
  spdlog::warn("refused {} from {} (tenant={}): {}", rpc::GrantModeName(mode), context.peer,
               context.tenant_id, st.message());
  return st;
}

asio::awaitable<rpc::Reply> DataService::Write(const rpc::DataRequest& req,
                                               rpc::PayloadReader& payload, bool privileged) {
  auto found = segments_->Find(req.segment_name(), req.segment_incarnation());
  if (!found.ok()) {
    ++counters_.requests_refused;
    LogRefusal("WRITE", found.status());
    co_return rpc::Reply::Error(found.status());
  }
  std::shared_ptr<SegmentMemory> segment = std::move(found).value();
  auto total = SegmentTable::CheckRanges(*segment, req.segment_name(), req.ranges(), true);
  const bool names_objects = req.record_keys_size() > 0;
  if (total.ok() && names_objects && req.record_keys_size() != req.ranges_size()) {
    total = Status(ErrorCode::INVALID_PARAMS,
                   fmt::format("segment={} WRITE names {} objects for {} ranges",
                               req.segment_name(), req.record_keys_size(), req.ranges_size()));
  }
  for (int i = 0; total.ok() && i < req.record_keys_size(); ++i) {
    // An empty key names nothing; any other is a key the master could take.
    if (req.record_keys(i).empty()) continue;
    if (Status bad = ValidateKey(req.record_keys(i)); !bad.ok()) {
      total = Status(ErrorCode::INVALID_PARAMS, fmt::format("segment={} WRITE names range {}: {}",
                                                            req.segment_name(), i, bad.message()));
    }
  }
  const uint64_t trailer = names_objects ? sizeof(uint64_t) * req.ranges_size() : 0;
  if (total.ok() && *total + trailer != payload.size()) {
    total = Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("segment={} WRITE ranges total {} bytes{} but payload is {}",
                    req.segment_name(), *total,
                    trailer > 0 ? fmt::format(" and {} of record trailer", trailer) : std::string(),
                    payload.size()));
  }
  if (!total.ok()) {
    ++counters_.requests_refused;
    spdlog::warn("refused WRITE: {}", total.status().ToString());
    co_return rpc::Reply::Error(total.status());
  }
  std::vector<asio::mutable_buffer> into;
  into.reserve(req.ranges_size() + 1);
  for (const auto& r : req.ranges()) into.emplace_back(segment->base() + r.offset(), r.length());
  std::vector<uint64_t> checksums(names_objects ? req.ranges_size() : 0);
  if (trailer > 0) into.emplace_back(checksums.data(), trailer);
  Status st = co_await payload.ReadInto(std::move(into));
  if (!st.ok()) co_return rpc::Reply::Error(st);
  counters_.bytes_written.fetch_add(*total, std::memory_order_relaxed);
  rpc::WriteReply reply;
  if (names_objects && privileged && recorder_ != nullptr) {
    for (uint64_t& c : checksums) c = le64toh(c);
    reply.set_recorded(recorder_->RecordWrites(req, checksums));
  }
  co_return rpc::Reply::Of(reply);
}

void DataService::LogRefusal(const char* op, const Status& why) {
  if (auto held = stale_refusals_.Allow()) {
    spdlog::warn("refused {}: {}{}", op, why.ToString(),
                 *held > 0 ? fmt::format(" ({} more refused since the last such line)", *held)
                           : std::string());
  }
}

rpc::Reply DataService::Read(const rpc::DataRequest& req) {
  auto found = segments_->Find(req.segment_name(), req.segment_incarnation());
  if (!found.ok() && tier_reader_ != nullptr) {
    if (std::optional<rpc::Reply> r = tier_reader_->Read(req)) {
      if (r->code == ErrorCode::OK) {
        uint64_t total = r->source != nullptr ? r->source->bytes() : 0;
        for (const auto& b : r->payload) total += b.size();
        counters_.bytes_read.fetch_add(total, std::memory_order_relaxed);
      } else {
        ++counters_.requests_refused;
      }
      return std::move(*r);
    }
  }
  if (!found.ok()) {
    ++counters_.requests_refused;
    LogRefusal("READ", found.status());
    return rpc::Reply::Error(found.status());
  }
  std::shared_ptr<SegmentMemory> segment = std::move(found).value();
  auto total = SegmentTable::CheckRanges(*segment, req.segment_name(), req.ranges(), false);
  if (!total.ok()) {
    ++counters_.requests_refused;
    spdlog::warn("refused READ: {}", total.status().ToString());
    return rpc::Reply::Error(total.status());
  }
  rpc::Reply reply = rpc::Reply::Of(rpc::Empty());
  reply.payload.reserve(req.ranges_size());
  for (const auto& r : req.ranges())
    reply.payload.emplace_back(segment->base() + r.offset(), r.length());
  if (req.status_trailer()) {
    // Good: every byte of the trailer and of its per-range codes is zero.
    static constexpr std::array<uint8_t, 64 * 1024> kZeros{};
    for (size_t left = ReadTrailerBytes(req.ranges_size(), req.range_status()); left > 0;) {
      const size_t n = std::min(left, kZeros.size());
      reply.payload.emplace_back(kZeros.data(), n);
      left -= n;
    }
  }
  reply.keep_alive = std::move(segment);
  // The reader holds a lease on each object until it has the bytes: nothing overwrites them
  // meanwhile, so the kernel may send them from the segment itself.
  reply.payload_stable = true;
  counters_.bytes_read.fetch_add(*total, std::memory_order_relaxed);
  return reply;
}

}  // namespace kvpool::transfer
