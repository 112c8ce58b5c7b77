#include "common/log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <sstream>

#include "common/log_throttle.h"

namespace kvpool {

// Log lines quote keys, which are any bytes: the line must stay one line of valid text.
TEST(LogTest, KeysInLogLinesArePrintable) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.push_back(sink);
  ASSERT_TRUE(InitLogging("info", "test").ok());  // sets the pattern on every sink
  spdlog::warn("key={} not found", std::string_view("\xff\xfe\n2026-01-01 FAKE LINE\x1b[2J"));
  sinks.erase(std::find(sinks.begin(), sinks.end(), sink));
  const std::string line = out.str();
  EXPECT_NE(line.find("[test:"), std::string::npos) << line;
  EXPECT_NE(line.find("key=\\xff\\xfe\\x0a2026-01-01 FAKE LINE\\x1b[2J not found"),
            std::string::npos)
      << line;
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
}

}  // namespace kvpool

namespace kvpool {

TEST(LogThrottleTest, OneLinePerIntervalCountingWhatWasHeldBack) {
  LogThrottle throttle(std::chrono::seconds(1));
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(throttle.Allow(t0), 0u);
  EXPECT_FALSE(throttle.Allow(t0 + std::chrono::milliseconds(10)).has_value());
  EXPECT_FALSE(throttle.Allow(t0 + std::chrono::milliseconds(999)).has_value());
  EXPECT_EQ(throttle.Allow(t0 + std::chrono::seconds(1)), 2u);
  EXPECT_FALSE(throttle.Allow(t0 + std::chrono::milliseconds(1500)).has_value());
  EXPECT_EQ(throttle.Allow(t0 + std::chrono::seconds(5)), 1u);
}

}  // namespace kvpool
