// The master's and the node's HTTP admin endpoints against a real pool: /metrics moves as a known
// workload dictates, the JSON endpoints describe what is stored, everything answers while a put/get
// loop runs, and `kvpool top` / `kvpool stat --json` read them.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "kvpool/host_allocator.h"
#include "pool.h"
#include "tools/prom_text.h"

namespace kvpool::testing {
namespace {

using nlohmann::json;

constexpr size_t kPage = 64 << 10;

class AdminTest : public ::testing::Test {
 protected:
  AdminTest()
      : http_port_(FreePort()),
        node_http_port_(FreePort()),
        pool_({"--metrics_port", std::to_string(http_port_)}) {}

  void SetUp() override {
    ASSERT_TRUE(WaitForPort(http_port_, std::chrono::seconds(10))) << pool_.master().Log();
    pool_.AddNode("32MB", {"--metrics_port", std::to_string(node_http_port_)});
    client_ = pool_.NewClient();
    ASSERT_NE(client_, nullptr);
    buf_.assign(16 * kPage, 0);
    for (size_t i = 0; i < buf_.size(); ++i) buf_[i] = static_cast<char>(i * 7 + 1);
    ASSERT_TRUE(client_->RegisterBuffer(buf_.data(), buf_.size()).ok());
  }

  std::string http_address() const { return "127.0.0.1:" + std::to_string(http_port_); }

  // GET `path` (of the master, or of the server on `port`); fails the test unless it answers
  // `want`.
  std::string Get(const std::string& path, int want = 200, uint16_t port = 0) {
    httplib::Client c("127.0.0.1", port != 0 ? port : http_port_);
    c.set_connection_timeout(5);
    c.set_read_timeout(5);
    auto r = c.Get(path);
    if (!r) {
      ADD_FAILURE() << path << ": " << httplib::to_string(r.error());
      return "";
    }
    EXPECT_EQ(r->status, want) << path << ": " << r->body;
    return r->body;
  }
  json GetJson(const std::string& path, int want = 200, uint16_t port = 0) {
    std::string body = Get(path, want, port);
    json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << path << ": " << body;
    return j;
  }

  // /metrics as name{labels} -> value ("name" alone when unlabelled; labels in sorted order).
  std::map<std::string, double> Metrics(uint16_t port = 0) {
    std::map<std::string, double> out;
    for (const auto& s : tools::ParsePromText(Get("/metrics", 200, port))) {
      std::string id = s.name;
      if (!s.labels.empty()) {
        id += "{";
        for (const auto& [k, v] : s.labels) id.append(k).append("=").append(v).append(",");
        id.back() = '}';
      }
      out[id] = s.value;
    }
    return out;
  }

  std::vector<Status> Put(const std::vector<std::string>& keys) {
    std::vector<const void*> ptrs;
    std::vector<size_t> sizes;
    for (size_t i = 0; i < keys.size(); ++i) {
      ptrs.push_back(buf_.data() + (i % 8) * kPage);
      sizes.push_back(kPage);
    }
    return client_->BatchPutFrom(keys, ptrs, sizes);
  }
  std::vector<Result<uint64_t>> GetBack(const std::vector<std::string>& keys) {
    std::vector<void*> ptrs;
    std::vector<size_t> sizes;
    for (size_t i = 0; i < keys.size(); ++i) {
      ptrs.push_back(buf_.data() + (8 + i % 8) * kPage);
      sizes.push_back(kPage);
    }
    return client_->BatchGetInto(keys, ptrs, sizes);
  }

  uint16_t http_port_;
  uint16_t node_http_port_;
  Pool pool_;
  std::unique_ptr<Client> client_;
  std::vector<char> buf_;
};

std::vector<std::string> Keys(const std::string& prefix, int n) {
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) keys.push_back(prefix + std::to_string(i));
  return keys;
}

TEST_F(AdminTest, NodeMetricsMoveAsAKnownWorkloadDictates) {
  EXPECT_EQ(Get("/health", 200, node_http_port_), "OK");
  auto before = Metrics(node_http_port_);
  const std::string seg = pool_.node_segment(0);
  EXPECT_EQ(before["kvpool_node_info{segment=" + seg + "}"], 1);
  EXPECT_EQ(before["kvpool_node_segment_capacity_bytes"], 32 << 20);
  EXPECT_EQ(before["kvpool_node_master_reachable"], 1);

  // The client contributes no segment: every byte crosses the node's TCP data port.
  auto keys = Keys("node/", 6);
  for (const Status& st : Put(keys)) ASSERT_TRUE(st.ok()) << st.ToString();
  for (const auto& r : GetBack(keys)) ASSERT_TRUE(r.ok()) << r.status().ToString();

  auto after = Metrics(node_http_port_);
  auto delta = [&](const std::string& id) { return after[id] - before[id]; };
  EXPECT_EQ(delta("kvpool_node_data_bytes_total{op=write}"), 6.0 * kPage);
  EXPECT_EQ(delta("kvpool_node_data_bytes_total{op=read}"), 6.0 * kPage);
  EXPECT_GE(delta("kvpool_node_data_requests_total{op=write}"), 1);
  EXPECT_GE(delta("kvpool_node_data_requests_total{op=read}"), 1);
  EXPECT_EQ(delta("kvpool_node_data_requests_refused_total"), 0);
  // The 384 KiB READ reply went zero-copy (the default 64 KiB threshold); on loopback the
  // kernel copies anyway, and a connection that learnt so stops asking.
  EXPECT_GE(delta("kvpool_node_data_zero_copy_sends_total"), 1);
  EXPECT_LE(after["kvpool_node_data_zero_copy_off_total"],
            after["kvpool_node_data_zero_copy_sends_total"]);
  EXPECT_EQ(after["kvpool_node_local_clients"], 0);

  json status = GetJson("/status", 200, node_http_port_);
  EXPECT_EQ(status["segment"], seg);
  EXPECT_EQ(status["capacity_bytes"], 32 << 20);
  EXPECT_GE(status["data"]["bytes_written"].get<double>(), 6.0 * kPage);
  EXPECT_EQ(status["local_clients"]["attached"], 0);
  Get("/nope", 404, node_http_port_);
}

// An attached engine's batch costs the master one request per phase, as an embedded client's
// does (client.h): the node neither splits it nor asks again per part. 24 x 1 MiB is three
// times the size at which the node used to split a batch.
TEST_F(AdminTest, StandaloneBatchCostsOneMasterRequestPerPhase) {
  const std::string segment = pool_.node_segment(0);
  StandaloneOptions so;
  so.server_address = segment;
  auto attached = Client::SetupStandalone(so);
  ASSERT_TRUE(attached.ok()) << attached.status().ToString();
  Client& c = **attached;
  constexpr size_t kCount = 24;
  constexpr size_t kSize = 1 << 20;
  HostMemAllocator alloc;
  auto mem = alloc.Alloc(2 * kCount * kSize);
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  auto* base = static_cast<uint8_t*>(*mem);
  ASSERT_TRUE(c.RegisterBuffer(base, 2 * kCount * kSize).ok());
  std::vector<std::string> keys = Keys("standalone/", kCount);
  std::vector<const void*> src;
  std::vector<void*> dst;
  std::vector<size_t> sizes(kCount, kSize);
  for (size_t i = 0; i < kCount; ++i) {
    for (size_t b = 0; b < kSize; b += 4096) base[i * kSize + b] = static_cast<uint8_t>(i + b);
    src.push_back(base + i * kSize);
    dst.push_back(base + (kCount + i) * kSize);
  }
  auto requests = [&](const char* method) {
    return Metrics()[std::string("kvpool_master_requests_total{method=") + method + "}"];
  };
  const double put_start = requests("put_start");
  const double put_end = requests("put_end");
  for (const auto& st : c.BatchPutFrom(keys, src, sizes)) ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(requests("put_start") - put_start, 1);
  EXPECT_EQ(requests("put_end") - put_end, 1);
  const double located = requests("get_replica_list");
  auto got = c.BatchGetInto(keys, dst, sizes);
  EXPECT_EQ(requests("get_replica_list") - located, 1);
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    EXPECT_EQ(std::memcmp(dst[i], src[i], kSize), 0) << keys[i];
  }
  (void)c.Close();
  (void)alloc.Free(base);
}

TEST_F(AdminTest, MetricsMoveAsAKnownWorkloadDictates) {
  EXPECT_EQ(Get("/health"), "OK");
  auto before = Metrics();
  const std::string seg = pool_.node_segment(0);
  EXPECT_EQ(before["kvpool_master_segment_capacity_bytes{segment=" + seg + "}"], 32 << 20);

  auto keys = Keys("page/", 10);
  for (const Status& st : Put(keys)) ASSERT_TRUE(st.ok()) << st.ToString();
  for (const auto& r : GetBack(keys)) ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(client_->GetInto("missing", buf_.data(), kPage).code(), ErrorCode::OBJECT_NOT_FOUND);
  auto probe = keys;
  for (const auto& k : Keys("absent/", 5)) probe.push_back(k);
  auto exist = client_->BatchIsExist(probe);
  for (size_t i = 0; i < probe.size(); ++i) {
    ASSERT_TRUE(exist[i].ok());
    EXPECT_EQ(*exist[i], i < 10) << probe[i];
  }
  for (int i = 7; i < 10; ++i) ASSERT_TRUE(client_->Remove(keys[i], /*force=*/true).ok());

  auto after = Metrics();
  auto delta = [&](const std::string& id) { return after[id] - before[id]; };
  auto m = [](const std::string& name, const std::string& method) {
    return name + "{method=" + method + "}";
  };
  EXPECT_GE(delta(m("kvpool_master_requests_total", "put_start")), 1);
  EXPECT_EQ(delta(m("kvpool_master_request_keys_total", "put_start")), 10);
  EXPECT_EQ(delta(m("kvpool_master_request_keys_total", "put_end")), 10);
  EXPECT_EQ(delta("kvpool_master_put_reserved_bytes_total"), 10.0 * kPage);
  EXPECT_EQ(delta(m("kvpool_master_request_keys_total", "get_replica_list")), 11);
  EXPECT_EQ(delta(m("kvpool_master_found_keys_total", "get_replica_list")), 10);
  EXPECT_EQ(delta("kvpool_master_get_located_bytes_total"), 10.0 * kPage);
  EXPECT_EQ(delta("kvpool_master_errors_total{code=OBJECT_NOT_FOUND,method=get_replica_list}"), 1);
  EXPECT_EQ(delta(m("kvpool_master_request_keys_total", "exists")), 15);
  EXPECT_EQ(delta(m("kvpool_master_found_keys_total", "exists")), 10);
  EXPECT_EQ(delta(m("kvpool_master_request_keys_total", "remove")), 3);
  EXPECT_GE(delta(m("kvpool_master_request_duration_seconds_count", "put_start")), 1);
  EXPECT_EQ(after["kvpool_master_objects"], 7);
  EXPECT_EQ(after["kvpool_master_segment_objects{segment=" + seg + "}"], 7);
  EXPECT_EQ(after["kvpool_master_segment_used_bytes{segment=" + seg + "}"], 7.0 * kPage);
  EXPECT_EQ(after["kvpool_master_segments"], 1);
  EXPECT_GE(after["kvpool_master_clients_alive"], 2);  // the node and this client
  EXPECT_EQ(after["kvpool_master_pending_objects"], 0);

  json segments = GetJson("/segments");
  ASSERT_EQ(segments["segments"].size(), 1u);
  EXPECT_EQ(segments["segments"][0]["name"], seg);
  EXPECT_EQ(segments["segments"][0]["objects"], 7);
  EXPECT_EQ(segments["segments"][0]["used_bytes"], 7 * kPage);

  std::set<std::string> listed;
  std::string cursor;
  for (int page = 0; page < 100; ++page) {
    json j = GetJson("/objects?prefix=page/&limit=3" + (cursor.empty() ? "" : "&cursor=" + cursor));
    ASSERT_LE(j["objects"].size(), 3u);
    for (const auto& o : j["objects"]) {
      EXPECT_TRUE(listed.insert(o["key"].get<std::string>()).second) << o;
      EXPECT_EQ(o["size"], kPage);
    }
    cursor = j["next_cursor"].get<std::string>();
    if (cursor.empty()) break;
  }
  EXPECT_EQ(listed, std::set<std::string>(keys.begin(), keys.begin() + 7));

  json obj = GetJson("/object?key=page/0");
  // Read a moment ago: its lease ended with the read (the release reaches the master within a
  // few milliseconds).
  for (int i = 0; i < 100 && obj["lease_remaining_ms"].get<int64_t>() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    obj = GetJson("/object?key=page/0");
  }
  EXPECT_EQ(obj["lease_remaining_ms"].get<int64_t>(), 0);
  EXPECT_EQ(obj["size"], kPage);
  EXPECT_EQ(obj["state"], "complete");
  ASSERT_EQ(obj["replicas"].size(), 1u);
  EXPECT_EQ(obj["replicas"][0]["segment"], seg);
  EXPECT_EQ(GetJson("/object?key=page/9", 404)["code"], "OBJECT_NOT_FOUND");
  EXPECT_EQ(GetJson("/objects?limit=0", 400)["code"], "INVALID_PARAMS");

  json clients = GetJson("/clients");
  bool node_listed = false;
  for (const auto& c : clients["clients"]) {
    if (c["segments"].size() == 1 && c["segments"][0] == seg) node_listed = true;
  }
  EXPECT_TRUE(node_listed) << clients;
  EXPECT_GE(clients["clients"].size(), 2u);
  Get("/nope", 404);
}

TEST_F(AdminTest, EndpointsAnswerWhileAPutGetLoopRuns) {
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0}, failures{0};
  std::string first_failure;  // written by the load thread only, read after join
  auto fail = [&](const Status& st) {
    if (failures++ == 0) first_failure = st.ToString();
  };
  std::thread load([&] {
    // Bounded: stops when told, or after 2,000 rounds.
    for (int i = 0; i < 2000 && !stop; ++i) {
      auto keys = Keys("load/" + std::to_string(i) + "/", 8);
      for (const Status& st : Put(keys)) {
        if (!st.ok()) fail(st);
      }
      for (const auto& r : GetBack(keys)) {
        if (!r.ok()) fail(r.status());
      }
      // Read objects are leased (not evictable) for 10 s: remove them to keep room.
      for (const Status& st : client_->BatchRemove(keys, /*force=*/true)) {
        if (!st.ok()) fail(st);
      }
      ++rounds;
    }
  });
  double last_requests = 0;
  for (int i = 0; i < 30; ++i) {
    EXPECT_EQ(Get("/health"), "OK");
    double requests = Metrics()["kvpool_master_requests_total{method=put_start}"];
    EXPECT_GE(requests, last_requests);
    last_requests = requests;
    EXPECT_EQ(GetJson("/segments")["segments"].size(), 1u);
    EXPECT_TRUE(GetJson("/objects?prefix=load/&limit=50")["objects"].is_array());
    EXPECT_TRUE(GetJson("/clients")["clients"].is_array());
    // Present while its round runs, absent before and after.
    httplib::Client c("127.0.0.1", http_port_);
    c.set_read_timeout(5);
    auto obj = c.Get("/object?key=load/0/0");
    ASSERT_TRUE(obj);
    EXPECT_TRUE(obj->status == 200 || obj->status == 404) << obj->status << obj->body;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop = true;
  load.join();
  EXPECT_GT(rounds, 0);
  EXPECT_EQ(failures, 0) << first_failure;
  EXPECT_GT(last_requests, 0);
}

TEST_F(AdminTest, TopAndStatJsonReadThePool) {
  for (const Status& st : Put(Keys("top/", 4))) ASSERT_TRUE(st.ok());
  auto r = RunCommand(
      kBinary, {"top", "--http", http_address(), "--iterations", "2", "--interval_ms", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Two screens, each with the segment table and the per-method table.
  size_t first = r.output.find("kvpool top - master http://" + http_address());
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kvpool top", first + 1), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(pool_.node_segment(0)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("4 objects"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("put_start"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("REQ/S"), std::string::npos) << r.output;

  r = RunCommand(kBinary, {"stat", "--json", "--master", pool_.master_address()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = json::parse(r.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["objects"], 4);
  ASSERT_EQ(j["segments"].size(), 1u);
  EXPECT_EQ(j["segments"][0]["name"], pool_.node_segment(0));

  // Unreachable: a clear error and exit 1, within the fetch deadline.
  r = RunCommand(kBinary, {"top", "--http", "127.0.0.1:1", "--iterations", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot fetch http://127.0.0.1:1/metrics"), std::string::npos)
      << r.output;
}

// POST `path` to the HTTP server on `port`, with `bearer` as Authorization when not empty.
httplib::Result PostTo(uint16_t port, const std::string& path, const std::string& bearer = "") {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5);
  c.set_read_timeout(5);
  httplib::Headers h;
  if (!bearer.empty()) h.emplace("Authorization", "Bearer " + bearer);
  return c.Post(path, h, "", "text/plain");
}

// A master with the pool secret: every admin endpoint that changes state (POST /drain) needs
// "Authorization: Bearer <secret>"; --admin_writes=false refuses it even with the secret.
TEST(AdminWritesTest, DrainNeedsTheSecretAndCanBeTurnedOff) {
  char dir_template[] = "/tmp/kvpool_admin_XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string secret_file = dir + "/secret";
  std::ofstream(secret_file) << "admin-test-secret\n";
  ::chmod(secret_file.c_str(), 0600);
  for (const std::string writes : {"true", "false"}) {
    uint16_t port = FreePort();
    Pool pool({"--metrics_port", std::to_string(port), "--auth_secret_file", secret_file,
               "--admin_writes", writes});
    ASSERT_TRUE(WaitForPort(port, std::chrono::seconds(10))) << pool.master().Log();
    for (const std::string path : {"/drain?segment=nope", "/drain?segment=nope&undo=1"}) {
      auto r = PostTo(port, path);
      ASSERT_TRUE(r) << httplib::to_string(r.error());
      EXPECT_EQ(r->status, writes == "true" ? 401 : 403) << path << ": " << r->body;
      r = PostTo(port, path, "wrong-secret");
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, writes == "true" ? 401 : 403) << path;
      r = PostTo(port, path, "admin-test-secret");
      ASSERT_TRUE(r);
      // With the secret the request reaches /drain, which knows no such segment.
      EXPECT_EQ(r->status, writes == "true" ? 404 : 403) << path << ": " << r->body;
    }
    if (writes == "true") {
      auto r = PostTo(port, "/drain?segment=nope&undo=maybe", "admin-test-secret");
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 400) << r->body;
    }
  }
  std::remove(secret_file.c_str());
  ::rmdir(dir.c_str());
}

// Slow-loris against a real master: 8 clients sending one header line every 400 ms (twice the
// old worker count) do not delay /health.
TEST_F(AdminTest, SlowClientsDoNotBlockHealth) {
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(http_port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ASSERT_GT(::send(fd, "GET /segments HTTP/1.1\r\n", 25, MSG_NOSIGNAL), 0);
    slow.push_back(fd);
  }
  for (int round = 0; round < 5; ++round) {
    for (int fd : slow) (void)::send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL);
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(Get("/health"), "OK");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  for (int fd : slow) ::close(fd);
}

TEST(AdminFlagsTest, MetricsPortTakenFailsClearly) {
  uint16_t port = FreePort();
  Pool first({"--metrics_port", std::to_string(port)});
  ASSERT_TRUE(WaitForPort(port, std::chrono::seconds(10)));
  auto r =
      RunCommand(kBinary, {"master", "--rpc_host", "127.0.0.1", "--rpc_port",
                           std::to_string(FreePort()), "--metrics_port", std::to_string(port)});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("http admin cannot listen on 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << r.output;
  r = RunCommand(kBinary, {"master", "--rpc_port", "7000", "--metrics_port", "7000"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--metrics_port=7000"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kvpool::testing
