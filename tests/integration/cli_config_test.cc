// `kvpool master --config FILE` / `kvpool node --config FILE` (docs/operations.md): real
// processes read the file (they listen where it says), the command line wins over it, and a
// missing or bad file is a usage error (exit 2) naming the file, the line and the key.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "pool.h"

namespace kvpool::testing {
namespace {

class ConfigFile {
 public:
  explicit ConfigFile(const std::string& text) {
    char tmpl[] = "/tmp/kvpool-config-XXXXXX";
    int fd = mkstemp(tmpl);
    close(fd);
    path_ = tmpl;
    std::ofstream(path_) << text;
  }
  ~ConfigFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Port(uint16_t p) { return std::to_string(p); }

// Runs a role that must refuse to start: it exits (within 10 s, not after running) with 2.
RunResult Refused(std::vector<std::string> args) {
  return RunCommand(kBinary, std::move(args), std::chrono::seconds(10));
}

TEST(CliConfigTest, MasterListensWhereTheFileSays) {
  // Top-level keys (TOML), a comment, a quoted string, an INI-style ';' comment.
  uint16_t port = FreePort();
  ConfigFile f("# the master\nrpc_port = " + Port(port) +
               "   # inline comment\nrpc_host = \"127.0.0.1\"\n; ini comment\nmetrics_port=0\n"
               "client_ttl = 3\ntenant_quota = [\"a=8MB\", \"b=1MB\"]\n");
  Process master(kBinary, {"master", "--config", f.path()}, "master");
  ASSERT_TRUE(WaitForPort(port, std::chrono::seconds(20))) << master.Log();
  EXPECT_TRUE(master.running()) << master.Log();
}

TEST(CliConfigTest, SectionAndPrefixNameTheRole) {
  uint16_t port = FreePort();
  ConfigFile f("master.rpc_host = 127.0.0.1\n[master]\nrpc_port = " + Port(port) +
               "\nmetrics_port = 0\n");
  Process master(kBinary, {"master", "--config", f.path()}, "master");
  ASSERT_TRUE(WaitForPort(port, std::chrono::seconds(20))) << master.Log();
}

TEST(CliConfigTest, CommandLineWinsOverTheFile) {
  uint16_t file_port = FreePort(), flag_port = FreePort();
  ConfigFile f("rpc_port = " + Port(file_port) + "\nrpc_host = 127.0.0.1\nmetrics_port = 0\n");
  Process master(kBinary, {"master", "--config", f.path(), "--rpc_port", Port(flag_port)},
                 "master");
  ASSERT_TRUE(WaitForPort(flag_port, std::chrono::seconds(20))) << master.Log();
  EXPECT_FALSE(WaitForPort(file_port, std::chrono::milliseconds(200)));
}

TEST(CliConfigTest, NodeMountsWithItsFile) {
  Pool pool;
  uint16_t port = FreePort();
  ConfigFile f("[node]\nhost = \"127.0.0.1\"\nport = " + Port(port) +
               "\nmaster_server_address = \"" + pool.master_address() +
               "\"\nglobal_segment_size = \"16MB\"\nprefault = true\nuse_hugepage = false\n");
  Process node(kBinary, {"node", "--config", f.path()}, "node");
  ASSERT_TRUE(WaitForPort(port, std::chrono::seconds(20))) << node.Log();
  EXPECT_TRUE(pool.WaitForSegment("127.0.0.1:" + Port(port))) << node.Log();
}

TEST(CliConfigTest, MissingFileIsAnErrorNamingIt) {
  const std::string path = "/tmp/kvpool-config-does-not-exist.toml";
  for (const char* role : {"master", "node"}) {
    std::vector<std::string> args = {role, "--config", path};
    if (std::string(role) == "master") {
      args.insert(args.end(), {"--rpc_port", Port(FreePort()), "--metrics_port", "0"});
    } else {
      args.insert(args.end(), {"--port", Port(FreePort())});
    }
    auto r = Refused(args);
    EXPECT_EQ(r.exit_code, 2) << role << ": " << r.output;
    EXPECT_NE(r.output.find("FILE_NOT_FOUND: --config " + path + ": No such file"),
              std::string::npos)
        << r.output;
  }
  char dir[] = "/tmp/kvpool-config-dir-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  auto r =
      Refused({"master", "--config", dir, "--rpc_port", Port(FreePort()), "--metrics_port", "0"});
  rmdir(dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(std::string(dir) + ": not a regular file"), std::string::npos)
      << r.output;
}

struct BadFile {
  const char* role;
  std::string text;
  std::string expected;  // after "--config FILE "
};

TEST(CliConfigTest, BadFilesNameFileLineAndKey) {
  const std::vector<BadFile> cases = {
      {"master", "rpc_host = 127.0.0.1\n\nrpc_prot = 5\n",
       "line 3: unknown key 'rpc_prot'; keys are the flags of kvpool master"},
      {"master", "rpc_host = 127.0.0.1\nclient_ttl = \"abc\"\n", "line 2: key 'client_ttl': "},
      {"master", "[master]\nmaster.client_ttl = 5\n", "line 2: unknown key 'master.client_ttl'"},
      {"master", "rpc_host = 127.0.0.1\nrpc_port\n", "line 2: 'rpc_port' is not KEY = VALUE"},
      {"master", "[nodes]\nport = 1\n", "line 1: unknown section [nodes]"},
      {"master", "node.port = 1\n", "line 1: unknown key 'node.port'"},
      {"master", "rpc_host = a\n# x\nrpc_host = b\n",
       "line 3: key 'rpc_host' set again (first on line 1)"},
      {"master", "config = /etc/other.toml\n", "line 1: unknown key 'config'"},
      {"master", "help = true\n", "line 1: unknown key 'help'"},
      {"node", "host = 127.0.0.1\nprefault = maybe\n", "line 2: key 'prefault': "},
      {"node", "[node]\nglobal_segment_sise = 1GB\n", "line 2: unknown key 'global_segment_sise'"},
      {"node", "tenant_quota = [\"a=1GB\"\n", "line 1: array without its closing ']'"},
  };
  for (const BadFile& c : cases) {
    ConfigFile f(c.text);
    std::vector<std::string> args = {c.role, "--config", f.path()};
    if (std::string(c.role) == "master") {
      args.insert(args.end(), {"--rpc_port", Port(FreePort()), "--metrics_port", "0"});
    } else {
      args.insert(args.end(), {"--port", Port(FreePort()), "--master_server_address",
                               "127.0.0.1:" + Port(FreePort())});
    }
    auto r = Refused(args);
    EXPECT_EQ(r.exit_code, 2) << c.text << "\n" << r.output;
    EXPECT_NE(r.output.find("--config " + f.path() + " " + c.expected), std::string::npos)
        << c.text << "\n"
        << r.output;
  }
}

TEST(CliConfigTest, OutOfRangeValueNamesTheLineThatSetIt) {
  ConfigFile f("rpc_host = 127.0.0.1\nmetrics_port = 0\neviction_ratio = 1.5\n");
  auto r = Refused({"master", "--config", f.path(), "--rpc_port", Port(FreePort())});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--eviction_ratio=1.5 is out of range: [0, 1], e.g. 0.05 (set by " +
                          f.path() + " line 3)"),
            std::string::npos)
      << r.output;
  ConfigFile n("io_threads = 0\n");
  r = Refused({"node", "--config", n.path(), "--port", Port(FreePort())});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(
      r.output.find("--io_threads=0 is out of range [1, 256] (set by " + n.path() + " line 1)"),
      std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace kvpool::testing
