// The master's request handling, every method, without sockets: a sequence of requests with
// arbitrary meta bytes goes through MasterService::Dispatch (decode, MasterCore, encode,
// metrics) on a fresh core with two mounted segments, under a fake clock that the input moves
// forward, interleaved with housekeeping rounds and admin endpoint queries.
//
// Input: records of [op u8][clock step u8 (x 50 ms)][len u16][len bytes]. op % 14 picks:
//   0..10  PING, MOUNT_SEGMENT, UNMOUNT_SEGMENT, PUT_START, PUT_END, GET_REPLICA_LIST, EXISTS,
//          EXISTS_PREFIX, REMOVE, REMOVE_ALL, STAT with the bytes as meta
//   11     housekeeping
//   12     a raw method number (first two bytes) with the rest as meta
//   13     an admin endpoint (AdminRoutes::Get): path by the first byte, the rest as a query
//          string "k=v&k=v"
//
// After the sequence the state is checked: every segment's use within its capacity, /metrics
// well-formed (every line parses, every segment has its gauges; for inputs that query admin
// endpoints, as rendering it is costly), a full /objects paging lists each object once, and once
// every client has expired (a day later) nothing is left: no segment, no object, no pending put.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <set>

#include "fuzz_input.h"
#include "master/admin_routes.h"
#include "master/master_service.h"
#include "tools/prom_text.h"

using namespace kvpool;
using namespace kvpool::master;

namespace {

const Clock::time_point kT0 = Clock::time_point(std::chrono::hours(1000));

constexpr uint16_t kMethods[] = {rpc::PING,       rpc::MOUNT_SEGMENT, rpc::UNMOUNT_SEGMENT,
                                 rpc::PUT_START,  rpc::PUT_END,       rpc::GET_REPLICA_LIST,
                                 rpc::EXISTS,     rpc::EXISTS_PREFIX, rpc::REMOVE,
                                 rpc::REMOVE_ALL, rpc::STAT};

MasterOptions FuzzOptions() {
  MasterOptions o;
  // Short timeouts, so a few clock steps reach leases, expiry, takeover and reclaim.
  o.default_kv_lease_ttl = std::chrono::milliseconds(1000);
  o.client_ttl = std::chrono::seconds(2);
  o.put_start_discard_timeout_sec = std::chrono::seconds(3);
  o.put_start_release_timeout_sec = std::chrono::seconds(5);
  o.enable_http_admin = false;
  return o;
}

void Mount(MasterCore& core, const char* client, const char* name, uint64_t size) {
  rpc::MountSegment m;
  m.set_client_id(client);
  m.set_segment_name(name);
  m.set_endpoint("127.0.0.1:7001");
  m.set_size(size);
  FUZZ_CHECK(core.MountSegment(m, kT0).ok());
}

AdminRoutes::Params Query(std::string_view q) {
  AdminRoutes::Params params;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view kv = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    params.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return params;
}

void CheckMetrics(const AdminRoutes& routes, const rpc::StatReply& stat) {
  AdminResponse m = routes.Get("/metrics", {});
  FUZZ_CHECK(m.status == 200);
  size_t skipped = 0;
  auto samples = tools::ParsePromText(m.body, &skipped);
  FUZZ_CHECK(skipped == 0);
  std::multiset<std::string> gauges;
  for (const auto& s : samples) {
    if (s.name == "kvpool_master_segment_capacity_bytes") gauges.insert(s.label("segment"));
  }
  std::multiset<std::string> names;
  for (const auto& seg : stat.segments()) names.insert(seg.segment_name());
  FUZZ_CHECK(gauges == names);
}

void CheckListing(MasterCore& core, uint64_t objects) {
  std::set<std::string> seen;
  std::string cursor;
  for (int page = 0; page < 100000; ++page) {
    auto l = core.ListObjects("", 7, cursor);
    FUZZ_CHECK(l.ok());
    for (const auto& e : l->objects) FUZZ_CHECK(seen.insert(e.key).second);
    if (l->next_cursor.empty()) break;
    cursor = l->next_cursor;
  }
  FUZZ_CHECK(seen.size() == objects);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const MasterOptions options = FuzzOptions();
  MasterCore core(options, /*epoch=*/1);
  Clock::time_point now = kT0;
  MasterService service(&core, [&now] { return now; });
  AdminRoutes routes(&core, &service.metrics(), 0, [&now] { return now; });
  Mount(core, "node-a", "seg-a", 1 << 20);
  Mount(core, "node-b", "seg-b", 64 << 10);

  fuzz::FuzzInput in(data, size);
  bool admin = false;  // the (costly) /metrics check runs for inputs that use the admin views
  for (int steps = 0; !in.empty() && steps < 256; ++steps) {
    uint8_t op = in.U8() % 14;
    now += std::chrono::milliseconds(50) * in.U8();
    fuzz::FuzzInput body = [&] {
      std::string_view chunk = in.Chunk();
      return fuzz::FuzzInput(reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size());
    }();
    if (op < 11) {
      rpc::Reply r = service.Dispatch(kMethods[op], body.Rest());
      FUZZ_CHECK(r.code != ErrorCode::INTERNAL_ERROR);
    } else if (op == 11) {
      core.Housekeeping(now);
    } else if (op == 12) {
      uint16_t method = body.U16();
      service.Dispatch(method, body.Rest());
    } else {
      admin = true;
      const auto& paths = AdminRoutes::Paths();
      std::string_view path = paths[body.U8() % paths.size()];
      AdminResponse r = routes.Get(path, Query(body.Rest()));
      FUZZ_CHECK(r.status == 200 || r.status == 400 || r.status == 404);
    }
  }

  rpc::StatReply stat = core.Stat();
  for (const auto& seg : stat.segments()) FUZZ_CHECK(seg.used() <= seg.size());
  if (admin) CheckMetrics(routes, stat);
  CheckListing(core, stat.object_count());

  // A day later every client has expired: the pool must be empty, with nothing leaked.
  now += std::chrono::hours(24);
  core.Housekeeping(now);
  rpc::StatReply empty = core.Stat();
  FUZZ_CHECK(empty.segments_size() == 0);
  FUZZ_CHECK(empty.object_count() == 0);
  FUZZ_CHECK(empty.client_count() == 0);
  FUZZ_CHECK(core.PendingObjects() == 0);
  return 0;
}
