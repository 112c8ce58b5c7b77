// The data plane's request checks: DataRequest decoding in DataService::Handle and
// SegmentTable::CheckRanges, for WRITE and READ against segments of awkward sizes. A request
// that is served must name the segment's memory (its incarnation) and lie wholly inside it: READ's
// reply buffers are checked against the segment's bounds, and WRITE's payload (sent through a real
// socket pair) must land exactly at the requested ranges.
//
// Input: [method u8][payload length u16][DataRequest meta...].
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <cstdlib>
#include <cstring>

#include "fuzz_input.h"
#include "transfer/data_service.h"
#include "transfer/read_trailer.h"

using namespace kvpool;

namespace {

struct Fixture {
  asio::io_context io;
  asio::ip::tcp::socket server{io};  // the DataService end of a Unix socket pair
  int peer = -1;                     // where the fuzzer writes the payload
  transfer::SegmentTable table;
  std::vector<std::pair<std::string, uint64_t>> segments = {
      {"one-page", 4096}, {"odd", 12345}, {"big", 1 << 20}};

  Fixture() {
    int fds[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0);
    int buf = 1 << 20;
    setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    server.assign(asio::ip::tcp::v4(), fds[0]);
    peer = fds[1];
    for (const auto& [name, size] : segments) {
      auto mem = transfer::SegmentMemory::Map(size, {});
      FUZZ_CHECK(mem.ok());
      FUZZ_CHECK(
          table.Add(name, std::shared_ptr<transfer::SegmentMemory>(std::move(mem).value())).ok());
    }
  }

  // Reads and drops whatever the service left unread.
  void Drain() {
    char sink[4096];
    while (recv(server.native_handle(), sink, sizeof(sink), MSG_DONTWAIT) > 0) {
    }
  }
};

Fixture& F() {
  static Fixture* f = new Fixture();
  return *f;
}

// Independent of CheckRanges: true when every range lies inside `size` bytes.
bool Inside(const rpc::DataRequest& req, uint64_t size) {
  for (const auto& r : req.ranges()) {
    if (static_cast<unsigned __int128>(r.offset()) + r.length() > size) return false;
  }
  return true;
}

// A named coroutine (gcc mangles a coroutine lambda inside an extern "C" function twice).
asio::awaitable<void> Handle(transfer::DataService& service, const rpc::FrameHeader& header,
                             std::string_view meta, rpc::PayloadReader& reader, rpc::Reply* reply) {
  *reply = co_await service.Handle(header, meta, reader);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& f = F();
  fuzz::FuzzInput in(data, size);
  uint8_t m = in.U8();
  uint16_t method = m % 3 == 0   ? uint16_t{rpc::WRITE}
                    : m % 3 == 1 ? uint16_t{rpc::READ}
                                 : uint16_t{m};
  size_t want_payload = in.U16() % (32 << 10);
  std::string_view meta = in.Rest();

  rpc::DataRequest req;
  bool parsed = req.ParseFromArray(meta.data(), static_cast<int>(meta.size()));
  auto segment = parsed ? f.table.Find(req.segment_name()) : nullptr;
  std::string rewritten;
  if (segment != nullptr && req.segment_incarnation() == 0) {
    // The seeds name no incarnation (the fixture's memory draws a random one): fill it in so
    // the served path is reached. Any other value names memory that is not served: refused.
    req.set_segment_incarnation(segment->incarnation());
    rewritten = req.SerializeAsString();
    meta = rewritten;
  }
  if (segment != nullptr) {
    // CheckRanges agrees with the independent check, for both directions.
    for (bool write : {true, false}) {
      auto total =
          transfer::SegmentTable::CheckRanges(*segment, req.segment_name(), req.ranges(), write);
      FUZZ_CHECK(total.ok() == Inside(req, segment->size()));
      if (!total.ok()) {
        FUZZ_CHECK(total.code() == (write ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ));
      }
    }
  }

  // The payload: a pattern, so a WRITE that is served can be checked byte for byte.
  std::string payload(want_payload, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 31 + 7);
  ssize_t sent = payload.empty() ? 0 : send(f.peer, payload.data(), payload.size(), MSG_DONTWAIT);
  payload.resize(sent > 0 ? static_cast<size_t>(sent) : 0);

  transfer::DataService service(&f.table);
  rpc::FrameHeader header;
  header.method = method;
  header.meta_len = static_cast<uint32_t>(meta.size());
  header.payload_len = payload.size();
  rpc::PayloadReader reader(f.server, payload.size());
  rpc::Reply reply;
  asio::co_spawn(f.io, Handle(service, header, meta, reader, &reply), asio::detached);
  f.io.restart();
  f.io.run();
  f.Drain();

  if (reply.code != ErrorCode::OK) return 0;
  FUZZ_CHECK(parsed && segment != nullptr && Inside(req, segment->size()));
  FUZZ_CHECK(req.segment_incarnation() == segment->incarnation());
  const uint8_t* base = segment->base();
  if (method == rpc::READ) {
    // One buffer per range, inside the segment; then, when asked for, the good status trailer
    // (with its per-range codes when asked for): all zero bytes.
    FUZZ_CHECK(static_cast<int>(reply.payload.size()) >= req.ranges_size());
    for (int i = 0; i < req.ranges_size(); ++i) {
      const auto& b = reply.payload[i];
      auto p = static_cast<const uint8_t*>(b.data());
      FUZZ_CHECK(b.size() == 0 || (p >= base && p + b.size() <= base + segment->size()));
    }
    size_t trailer = 0;
    for (size_t i = static_cast<size_t>(req.ranges_size()); i < reply.payload.size(); ++i) {
      const auto& t = reply.payload[i];
      auto p = static_cast<const uint8_t*>(t.data());
      for (size_t k = 0; k < t.size(); ++k) FUZZ_CHECK(p[k] == 0);
      trailer += t.size();
    }
    FUZZ_CHECK(trailer == (req.status_trailer()
                               ? transfer::ReadTrailerBytes(req.ranges_size(), req.range_status())
                               : 0));
  } else {
    FUZZ_CHECK(method == rpc::WRITE);
    // The payload landed at the ranges, in order (a later range may overwrite an earlier one).
    size_t at = 0;
    for (const auto& r : req.ranges()) {
      FUZZ_CHECK(at + r.length() <= payload.size());
      at += r.length();
    }
    FUZZ_CHECK(at == payload.size());
    const auto& ranges = req.ranges();
    if (ranges.size() > 0) {
      const auto& last = ranges[ranges.size() - 1];
      FUZZ_CHECK(std::memcmp(base + last.offset(), payload.data() + (at - last.length()),
                             last.length()) == 0);
    }
  }
  return 0;
}
