#include "node/node_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvpool::node {
namespace {

NodeOptions Parse(std::vector<std::string> args) {
  CLI::App app;
  NodeOptions o;
  AddNodeFlags(app, o);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);  // CLI11 takes the arguments back to front
  return o;
}

// The segment is faulted in before the node mounts it by default; bare --prefault (the old flag)
// still means true, and both spellings of false opt out.
TEST(NodeOptionsTest, PrefaultDefaultsOnAndTakesTrueFalseOrNothing) {
  EXPECT_TRUE(Parse({}).prefault);
  EXPECT_TRUE(Parse({"--prefault"}).prefault);
  EXPECT_TRUE(Parse({"--prefault", "--io_threads", "3"}).prefault);
  EXPECT_EQ(Parse({"--prefault", "--io_threads", "3"}).io_threads, 3);
  EXPECT_FALSE(Parse({"--prefault", "false"}).prefault);
  EXPECT_FALSE(Parse({"--prefault=false"}).prefault);
  EXPECT_TRUE(Parse({"--prefault", "true"}).prefault);
}

// Faulting in behind a node that already serves is asked for by name (issue 29: the first writes
// overtake it), and keeps --prefault on.
TEST(NodeOptionsTest, PrefaultInBackgroundIsOffByDefaultAndABareFlag) {
  EXPECT_FALSE(Parse({}).prefault_in_background);
  const NodeOptions o = Parse({"--prefault_in_background"});
  EXPECT_TRUE(o.prefault_in_background);
  EXPECT_TRUE(o.prefault);
  EXPECT_FALSE(Parse({"--prefault_in_background=false"}).prefault_in_background);
}

}  // namespace
}  // namespace kvpool::node
