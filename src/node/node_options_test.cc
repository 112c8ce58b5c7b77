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

// The segment prefaults in the background by default; bare --prefault (the old flag) still means
// true, and both spellings of false opt out.
TEST(NodeOptionsTest, PrefaultDefaultsOnAndTakesTrueFalseOrNothing) {
  EXPECT_TRUE(Parse({}).prefault);
  EXPECT_TRUE(Parse({"--prefault"}).prefault);
  EXPECT_TRUE(Parse({"--prefault", "--io_threads", "3"}).prefault);
  EXPECT_EQ(Parse({"--prefault", "--io_threads", "3"}).io_threads, 3);
  EXPECT_FALSE(Parse({"--prefault", "false"}).prefault);
  EXPECT_FALSE(Parse({"--prefault=false"}).prefault);
  EXPECT_TRUE(Parse({"--prefault", "true"}).prefault);
}

}  // namespace
}  // namespace kvpool::node
