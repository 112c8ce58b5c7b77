// The `kvpool` command line against a real pool: exit codes and messages a user sees.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pool.h"

namespace kvpool::testing {
namespace {

std::string TempFile(const std::string& content) {
  char tmpl[] = "/tmp/kvpool-cli-XXXXXX";
  int fd = mkstemp(tmpl);
  close(fd);
  std::ofstream(tmpl, std::ios::binary) << content;
  return tmpl;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(CliTest, PutGetExistsRmStat) {
  Pool pool;
  pool.AddNode("32MB");
  pool.AddNode("32MB");
  const std::string m = pool.master_address();
  std::string content(300000, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 131 % 251);
  std::string in = TempFile(content), out = TempFile("");

  auto r = RunCommand(kBinary, {"put", "page-1", in, "--master", m});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("292.97 KiB"), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"get", "page-1", out, "--master", m});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadAll(out), content);
  r = RunCommand(kBinary, {"exists", "page-1", "--master", m});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("yes"), std::string::npos);
  r = RunCommand(kBinary, {"stat", "--master", m});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 segments"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 objects"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(pool.node_segment(0)), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"rm", "page-1", "--master", m, "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(kBinary, {"exists", "page-1", "--master", m});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no"), std::string::npos);
  unlink(in.c_str());
  unlink(out.c_str());
}

// Issue 33: `get KEY -` writes the bytes to standard output (the summary to standard error),
// and a long key is shown cut, with its length, in what the command prints.
TEST(CliTest, GetToStandardOutputAndLongKeysShownCut) {
  Pool pool;
  pool.AddNode("16MB");
  const std::string m = pool.master_address();
  const std::string content = "bytes to stdout\n\x01\x02";
  const std::string in = TempFile(content);
  auto r = RunCommand(kBinary, {"put", "to-stdout", in, "--master", m});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string out = TempFile("");
  r = RunCommand("/bin/sh",
                 {"-c", std::string(kBinary) + " get to-stdout - --master " + m + " > " + out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadAll(out), content);
  EXPECT_NE(r.output.find("standard output"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists("-"));

  const std::string long_key(4000, 'k');
  r = RunCommand(kBinary, {"put", long_key, in, "--master", m});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::string(128, 'k') + "...(4000 bytes)"), std::string::npos)
      << r.output.size();
  EXPECT_EQ(r.output.find(std::string(129, 'k')), std::string::npos) << r.output.size();
  r = RunCommand(kBinary, {"get", long_key + "x", out, "--master", m});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("...(4001 bytes)"), std::string::npos) << r.output.size();
  EXPECT_EQ(r.output.find(std::string(129, 'k')), std::string::npos) << r.output.size();
  unlink(in.c_str());
  unlink(out.c_str());
}

TEST(CliTest, FailuresAreClearAndNonZero) {
  Pool pool;
  pool.AddNode("16MB");
  const std::string m = pool.master_address();
  auto r = RunCommand(kBinary, {"get", "missing", "/tmp/kvpool-cli-never", "--master", m});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("OBJECT_NOT_FOUND"), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"put", "k", "/nonexistent/file", "--master", m});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("FILE_OPEN_FAIL"), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"stat", "--master", "127.0.0.1:" + std::to_string(FreePort())});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("RPC_FAIL"), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"stat", "--master", "not an address:x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("INVALID_PARAMS"), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"node", "--global_segment_size", "12XB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--global_segment_size"), std::string::npos) << r.output;
  r = RunCommand(kBinary, {"master", "--eviction_high_watermark_ratio", "1.5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("eviction_high_watermark_ratio"), std::string::npos) << r.output;
}

TEST(CliTest, NodeUnmountsOnSigterm) {
  Pool pool;
  Process& node = pool.AddNode("16MB");
  node.Signal(SIGTERM);
  EXPECT_EQ(node.Wait(std::chrono::seconds(10)), 0) << node.Log();
  EXPECT_TRUE(pool.WaitForSegments(0));
  EXPECT_NE(node.Log().find("unmounted segment"), std::string::npos) << node.Log();
}

}  // namespace
}  // namespace kvpool::testing
