#include "common/metrics.h"

#include <gtest/gtest.h>

#include <limits>
#include <thread>
#include <vector>

namespace kvpool::metrics {
namespace {

TEST(MetricsTest, CounterCountsAcrossThreads) {
  Counter c;
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 10000; ++i) c.Add();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000u);
}

TEST(MetricsTest, HistogramBucketsAreLessOrEqualAndCumulativeInText) {
  LatencyHistogram h;
  h.ObserveNanos(0);               // first bucket
  h.ObserveNanos(10'000);          // le=1e-05 exactly
  h.ObserveNanos(10'001);          // le=2.5e-05
  h.ObserveNanos(99'000'000'000);  // +Inf
  auto s = h.Take();
  EXPECT_EQ(s.counts[0], 2u);
  EXPECT_EQ(s.counts[1], 1u);
  EXPECT_EQ(s.counts.back(), 1u);
  EXPECT_EQ(s.count(), 4u);
  TextWriter w;
  w.Family("x_seconds", "histogram", "help");
  w.Histogram("x_seconds", {{"method", "get"}}, s);
  const std::string& t = w.text();
  EXPECT_NE(t.find("# TYPE x_seconds histogram\n"), std::string::npos) << t;
  EXPECT_NE(t.find("x_seconds_bucket{method=\"get\",le=\"1e-05\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("x_seconds_bucket{method=\"get\",le=\"2.5e-05\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("x_seconds_bucket{method=\"get\",le=\"10\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("x_seconds_bucket{method=\"get\",le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(t.find("x_seconds_count{method=\"get\"} 4\n"), std::string::npos);
  EXPECT_NE(t.find("x_seconds_sum{method=\"get\"} 99.000020001\n"), std::string::npos) << t;
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  TextWriter w;
  w.Sample("m", {{"segment", "10.0.0.1:7000"}, {"k", "q\""}}, uint64_t{7});
  w.Sample("n", {}, 0.5);
  w.WriteGauge("g", "a gauge", std::numeric_limits<double>::infinity());
  EXPECT_EQ(w.text(),
            "m{segment=\"10.0.0.1:7000\",k=\"q\\\"\"} 7\nn 0.5\n"
            "# HELP g a gauge\n# TYPE g gauge\ng +Inf\n");
}

}  // namespace
}  // namespace kvpool::metrics
