// The client commands against what a careless user gives them (docs/operations.md, "Client
// commands"): Ctrl-C / SIGTERM while a call waits, FILE arguments that are not regular files,
// bad usage (exit 2), and `kvpool top` pointed at a node's HTTP port.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <fstream>
#include <thread>

#include "pool.h"

namespace kvpool::testing {
namespace {

// A "master" that accepts TCP connections (the kernel completes them from the backlog) and
// never answers: every call of a client blocks until its deadline.
class StalledMaster {
 public:
  StalledMaster() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd_, 64), 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    address_ = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  }
  ~StalledMaster() {
    for (int fd : accepted_) ::close(fd);
    ::close(fd_);
  }
  const std::string& address() const { return address_; }

  // True once a client has connected (within `timeout`): it is then blocked in its call. The
  // connection is kept open, unanswered.
  bool WaitForClient(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
    int c = ::accept(fd_, nullptr, nullptr);
    if (c >= 0) accepted_.push_back(c);
    return c >= 0;
  }

 private:
  int fd_ = -1;
  std::string address_;
  std::vector<int> accepted_;
};

std::string WriteTemp(const std::string& content) {
  char tmpl[] = "/tmp/kvpool-cli-input-XXXXXX";
  int fd = mkstemp(tmpl);
  close(fd);
  std::ofstream(tmpl, std::ios::binary) << content;
  return tmpl;
}

TEST(CliInputTest, SignalsEndABlockedCommandPromptly) {
  std::string in = WriteTemp("payload");
  const std::string out = "/tmp/kvpool-cli-input-never-written";
  const std::vector<std::vector<std::string>> commands = {
      {"put", "k", in}, {"get", "k", out}, {"exists", "k"}, {"rm", "k"}, {"stat"}};
  for (const auto& [sig, code, name] :
       {std::tuple{SIGINT, 130, "SIGINT"}, std::tuple{SIGTERM, 143, "SIGTERM"}}) {
    for (auto args : commands) {
      StalledMaster master;  // one each: no connection left over from the command before
      // The deadline is far away: only the signal can end the command within the test's bound.
      args.insert(args.end(), {"--master", master.address(), "--timeout_ms", "60000"});
      Process p(kBinary, args, args[0]);
      ASSERT_TRUE(master.WaitForClient(std::chrono::seconds(10))) << args[0] << ":\n" << p.Log();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ASSERT_TRUE(p.running()) << args[0] << " did not block:\n" << p.Log();
      auto sent = std::chrono::steady_clock::now();
      p.Signal(sig);
      int exit_code = p.Wait(std::chrono::seconds(5));
      auto took = std::chrono::steady_clock::now() - sent;
      EXPECT_EQ(exit_code, code) << args[0] << " " << name << ":\n" << p.Log();
      EXPECT_LT(took, std::chrono::seconds(1)) << args[0] << " " << name;
      // Exited by itself (the message), not killed by the signal's default action.
      EXPECT_NE(p.Log().find("kvpool " + args[0] + ": interrupted by " + name), std::string::npos)
          << p.Log();
    }
  }
  struct stat st {};
  EXPECT_NE(stat(out.c_str(), &st), 0) << "an interrupted get left " << out;
  unlink(in.c_str());
}

TEST(CliInputTest, PutRefusesWhatIsNotARegularFile) {
  // Checked before any call: the master need not be reachable for the error, nor the error
  // wait for it.
  const std::string master = "127.0.0.1:" + std::to_string(FreePort());
  char dir[] = "/tmp/kvpool-cli-input-dir-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string empty = WriteTemp("");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir, "INVALID_PARAMS: '" + std::string(dir) + "' is a directory, not a regular file"},
      {"/dev/zero", "INVALID_PARAMS: '/dev/zero' is a character device, not a regular file"},
      {fifo, "INVALID_PARAMS: '" + fifo + "' is a FIFO, not a regular file"},
      {empty, "INVALID_PARAMS: '" + empty + "' is empty"},
      {"/nonexistent/file",
       "FILE_OPEN_FAIL: cannot open '/nonexistent/file' for reading: No such file"}};
  for (const auto& [path, expected] : cases) {
    auto r = RunCommand(kBinary, {"put", "k", path, "--master", master}, std::chrono::seconds(10));
    EXPECT_EQ(r.exit_code, 1) << path << ": " << r.output;
    EXPECT_NE(r.output.find("kvpool put: " + expected), std::string::npos) << r.output;
  }
  unlink(fifo.c_str());
  rmdir(dir);
  unlink(empty.c_str());
}

TEST(CliInputTest, FileLimitsAgainstAPool) {
  Pool pool;
  pool.AddNode("16MB");
  const std::string big = WriteTemp("");
  ASSERT_EQ(truncate(big.c_str(), 64 << 20), 0);  // sparse: no disk, no memory
  auto r = RunCommand(kBinary, {"put", "big", big, "--master", pool.master_address()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("INVALID_PARAMS: '" + big +
                          "' is 64.00 MiB, more than the pool's whole capacity"),
            std::string::npos)
      << r.output;
  unlink(big.c_str());
  // get into a directory: a clear error, no abort.
  const std::string small = WriteTemp("abc");
  r = RunCommand(kBinary, {"put", "small", small, "--master", pool.master_address()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(kBinary, {"get", "small", "/tmp", "--master", pool.master_address()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("kvpool get: FILE_WRITE_FAIL: cannot open '/tmp' for writing: Is a "
                          "directory"),
            std::string::npos)
      << r.output;
  unlink(small.c_str());
}

TEST(CliInputTest, EveryUsageErrorExits2) {
  const std::string m = "127.0.0.1:" + std::to_string(FreePort());
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"put"},
      {"put", "k"},
      {"get", "k"},
      {"exists"},
      {"stat", "--bogus"},
      {"stat", "extra"},
      {"stat", "--master"},
      {"stat", "--master", m, "--timeout_ms", "0"},
      {"stat", "--master", m, "--timeout_ms=-5"},
      {"stat", "--master", m, "--timeout_ms", "abc"},
      {"exists", "k", "--master", m, "--timeout_ms", "600001"},
      {"rm", "k", "--force=maybe"},
      {"top", "--interval_ms", "5"},
      {"master", "--rpc_port", "abc"},
      {"node", "--bogus"},
      {"tenant-key"},
  };
  for (const auto& args : cases) {
    auto r = RunCommand(kBinary, args, std::chrono::seconds(10));
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    EXPECT_EQ(r.exit_code, 2) << shown << "\n" << r.output;
  }
  auto r = RunCommand(kBinary, {"stat", "--timeout_ms", "0"});
  EXPECT_NE(r.output.find("--timeout_ms: Value 0 not in range 1 to 600000"), std::string::npos)
      << r.output;
  r = RunCommand(kBinary, {"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(kBinary, {"put", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CliInputTest, TopRefusesANodesHttpPort) {
  Pool pool;
  uint16_t http = FreePort();
  pool.AddNode("16MB", {"--metrics_port", std::to_string(http)});
  ASSERT_TRUE(WaitForPort(http, std::chrono::seconds(10)));
  const std::string where = "127.0.0.1:" + std::to_string(http);
  auto r = RunCommand(kBinary, {"top", "--http", where, "--iterations", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("http://" + where + "/metrics is kvpool node " + pool.node_segment(0) +
                          "'s, not the master's"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace kvpool::testing
