// Hostile and careless peers against real `kvpool master` and `kvpool node` processes
// (docs/security.md, "Resources before trust"): idle and half-sent connections on every port
// neither lock real clients out nor grow memory by what they announce, and a normal client's
// latency holds meanwhile.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rpc/frame.h"
#include "rpc/kvpool.pb.h"
#include "rpc/raw_peer_test_util.h"
#include "rpc/unix_socket.h"
#include "standalone_support.h"

namespace kvpool::testing {
namespace {

// VmRSS of process `pid`, in bytes (0 when unreadable).
uint64_t ResidentBytes(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

std::string Header(uint16_t method, uint32_t meta_len) {
  rpc::FrameHeader h;
  h.method = method;
  h.request_id = 1;
  h.meta_len = meta_len;
  std::string out(rpc::kFrameHeaderBytes, '\0');
  rpc::EncodeFrameHeader(h, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

// HELLO on a raw TCP socket, reply read (a server without a secret: past the handshake).
bool TcpHello(int fd) {
  rpc::Hello hello;
  hello.set_protocol_version(rpc::kProtocolVersion);
  std::string meta = hello.SerializeAsString();
  std::string frame = Header(rpc::HELLO, static_cast<uint32_t>(meta.size())) + meta;
  if (::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(frame.size())) {
    return false;
  }
  uint8_t rb[rpc::kFrameHeaderBytes];
  if (::recv(fd, rb, sizeof(rb), MSG_WAITALL) != static_cast<ssize_t>(sizeof(rb))) return false;
  auto r = rpc::DecodeFrameHeader(rb, rpc::FrameLimits());
  if (!r.ok()) return false;
  std::string m(r->meta_len, '\0');
  return m.empty() || ::recv(fd, m.data(), m.size(), MSG_WAITALL) == static_cast<ssize_t>(m.size());
}

// The connections one hostile kind opens; closed at destruction.
struct Hostiles {
  std::vector<int> fds;
  ~Hostiles() {
    for (int fd : fds) ::close(fd);
  }
  void Add(int fd) {
    if (fd >= 0) fds.push_back(fd);
  }
};

// 1,024 idle connections on the node's Unix socket (more than the old cap), and some that
// stop in the middle of a frame: a standalone client still attaches and round-trips its bytes.
TEST(HostileLocalTest, IdleLocalConnectionsDoNotLockOutAStandaloneClient) {
  Pool pool;
  const uint16_t port = FreePort();
  auto node = StartNode(pool, port, "64MB");
  Hostiles h;
  for (int i = 0; i < 1024; ++i) {
    auto fd = rpc::ConnectUnix(LocalSocket(port), DeadlineAfter(std::chrono::seconds(2)));
    ASSERT_TRUE(fd.ok()) << i << ": " << fd.status().ToString();
    h.Add(std::move(fd).value().release());
  }
  const std::string partial = Header(rpc::HELLO, 40).substr(0, 17);
  for (int i = 0; i < 64; ++i) {
    auto fd = rpc::ConnectUnix(LocalSocket(port), DeadlineAfter(std::chrono::seconds(2)));
    ASSERT_TRUE(fd.ok());
    ASSERT_GT(::send(fd->get(), partial.data(), partial.size(), MSG_NOSIGNAL), 0);
    h.Add(std::move(fd).value().release());
  }
  auto start = Clock::now();
  auto client = Attach(StandaloneFor(port));
  ASSERT_NE(client, nullptr) << node->Log();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> values;
  for (int i = 0; i < 8; ++i) {
    keys.push_back("hostile-local-" + std::to_string(i));
    values.emplace_back(100000 + i);
    FillPage(keys.back(), values.back().data(), values.back().size());
  }
  std::vector<std::span<const uint8_t>> spans(values.begin(), values.end());
  for (const Status& st : client->BatchPut(keys, spans)) ASSERT_TRUE(st.ok()) << st.ToString();
  auto got = client->BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    EXPECT_EQ(*got[i], values[i]) << keys[i];
  }
  // The idle ones are being closed (the oldest make room; the rest time out before attaching).
  EXPECT_TRUE(node->WaitForLog("not attached", std::chrono::seconds(5)));
}

// p50 of `n` single puts and gets of 64 KiB through `client`, in microseconds.
std::pair<double, double> PutGetP50(Client& client, const std::string& prefix, int n) {
  std::vector<double> put_us, get_us;
  std::vector<uint8_t> value(64 << 10, 7);
  for (int i = 0; i < n; ++i) {
    std::string key = prefix + std::to_string(i);
    auto t0 = Clock::now();
    auto st = client.BatchPut({key}, {std::span<const uint8_t>(value)});
    auto t1 = Clock::now();
    auto got = client.BatchGet({key});
    auto t2 = Clock::now();
    EXPECT_TRUE(st[0].ok()) << st[0].ToString();
    EXPECT_TRUE(got[0].ok() && *got[0] == value) << key;
    put_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    get_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  std::nth_element(put_us.begin(), put_us.begin() + n / 2, put_us.end());
  std::nth_element(get_us.begin(), get_us.begin() + n / 2, get_us.end());
  return {put_us[n / 2], get_us[n / 2]};
}

// 1,000 hostile connections of every kind at once (master RPC, node data port, node Unix
// socket, master HTTP): master and node memory stay within 64 MB of idle, and a normal
// client's put/get p50 within 2x of unloaded.
TEST(HostileLoadTest, ThousandHostileConnectionsKeepMemoryAndLatencyBounded) {
  const uint16_t http_port = FreePort();
  Pool pool({"--metrics_port", std::to_string(http_port)});
  pool.AddNode("128MB");
  const uint16_t node_port = static_cast<uint16_t>(
      std::stoi(pool.node_segment(0).substr(pool.node_segment(0).rfind(':') + 1)));
  const uint16_t master_port = static_cast<uint16_t>(
      std::stoi(pool.master_address().substr(pool.master_address().rfind(':') + 1)));
  auto client = pool.NewClient();
  ASSERT_NE(client, nullptr);
  // The node faults its segment in on a background thread (--prefault): "idle" is once that is
  // done, or the segment's own pages would count as growth under load.
  const auto resident_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (ResidentBytes(pool.node(0).pid()) < (128u << 20) / 100 * 98 &&
         std::chrono::steady_clock::now() < resident_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto idle = PutGetP50(*client, "warm-", 50);
  idle = PutGetP50(*client, "idle-", 200);
  const uint64_t master_idle = ResidentBytes(pool.master().pid());
  const uint64_t node_idle = ResidentBytes(pool.node(0).pid());

  Hostiles h;
  const std::string huge = Header(rpc::READ, rpc::FrameLimits().max_meta_bytes);  // 64 MiB
  for (int i = 0; i < 125; ++i) {
    h.Add(rpc::RawLoopbackSocket(master_port));  // silent before HELLO
    h.Add(rpc::RawLoopbackSocket(node_port));
    int m = rpc::RawLoopbackSocket(
        master_port);  // HELLO, then a header announcing 64 MiB and 1 KiB of it
    if (m >= 0 && TcpHello(m)) {
      (void)::send(m, huge.data(), huge.size(), MSG_NOSIGNAL);
      (void)::send(m, std::string(1024, 'x').data(), 1024, MSG_NOSIGNAL);
    }
    h.Add(m);
    int n = rpc::RawLoopbackSocket(node_port);  // HELLO, then half a header
    if (n >= 0 && TcpHello(n)) (void)::send(n, huge.data(), 16, MSG_NOSIGNAL);
    h.Add(n);
    h.Add(rpc::RawLoopbackSocket(http_port));  // HTTP: one line of a request, never finished
    (void)::send(h.fds.back(), "GET /segments HTTP/1.1\r\n", 24, MSG_NOSIGNAL);
  }
  const uint16_t local_port = node_port;
  for (int i = 0; i < 375; ++i) {
    auto fd = rpc::ConnectUnix(LocalSocket(local_port), DeadlineAfter(std::chrono::seconds(2)));
    if (fd.ok()) h.Add(std::move(fd).value().release());
  }
  EXPECT_GE(h.fds.size(), 1000u);
  auto loaded = PutGetP50(*client, "loaded-", 200);
  const uint64_t master_loaded = ResidentBytes(pool.master().pid());
  const uint64_t node_loaded = ResidentBytes(pool.node(0).pid());
  std::printf(
      "hostile load: %zu connections; master RSS %.1f -> %.1f MB, node RSS %.1f -> %.1f "
      "MB; put p50 %.0f -> %.0f us, get p50 %.0f -> %.0f us\n",
      h.fds.size(), master_idle / 1e6, master_loaded / 1e6, node_idle / 1e6, node_loaded / 1e6,
      idle.first, loaded.first, idle.second, loaded.second);
  EXPECT_LT(master_loaded, master_idle + (64u << 20));
  EXPECT_LT(node_loaded, node_idle + (64u << 20));
  // 2x, plus 100 us for a shared 2-core test machine's noise.
  EXPECT_LT(loaded.first, 2 * idle.first + 100) << "put p50";
  EXPECT_LT(loaded.second, 2 * idle.second + 100) << "get p50";
}

}  // namespace
}  // namespace kvpool::testing
