// The Prometheus exposition (serve/metrics.h): cumulative buckets, sums in the unit of the name,
// every family once with its HELP and TYPE, and label values escaped.
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "serve/metrics.h"

namespace infer::serve {
namespace {

// The exposition's samples by their full name with labels.
std::map<std::string, std::string> samples(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

TEST(Metrics, HistogramBucketsAreCumulativeAndSumInSeconds) {
  Metrics m;
  ModelMetrics& a = m.add_model("a");
  a.request_ns.observe(40'000);  // <= 50 us
  a.request_ns.observe(70'000);  // <= 100 us
  a.request_ns.observe(70'000);
  a.request_ns.observe(20'000'000'000);  // over every bound: +Inf only
  a.batch_size.observe(3);
  const auto s = samples(m.render());
  EXPECT_EQ(s.at("infer_request_seconds_bucket{model=\"a\",le=\"5e-05\"}"), "1");
  EXPECT_EQ(s.at("infer_request_seconds_bucket{model=\"a\",le=\"0.0001\"}"), "3");
  EXPECT_EQ(s.at("infer_request_seconds_bucket{model=\"a\",le=\"10\"}"), "3");
  EXPECT_EQ(s.at("infer_request_seconds_bucket{model=\"a\",le=\"+Inf\"}"), "4");
  EXPECT_EQ(s.at("infer_request_seconds_count{model=\"a\"}"), "4");
  EXPECT_EQ(s.at("infer_request_seconds_sum{model=\"a\"}"), "20.00018");
  EXPECT_EQ(s.at("infer_batch_size_bucket{model=\"a\",le=\"2\"}"), "0");
  EXPECT_EQ(s.at("infer_batch_size_bucket{model=\"a\",le=\"4\"}"), "1");
  EXPECT_EQ(s.at("infer_batch_size_sum{model=\"a\"}"), "3");
}

TEST(Metrics, EachFamilyOnceWithEveryModelAndEscapedLabels) {
  Metrics m;
  ModelMetrics& a = m.add_model("a\"b\\c");
  ModelMetrics& b = m.add_model("second");
  a.requests += 5;
  b.fail(FailureReason::QueueFull);
  m.received += 3;
  m.answered += 1;
  const std::string text = m.render();
  for (const char* family :
       {"infer_requests_total", "infer_request_failures_total", "infer_images_total", "infer_queue_seconds",
        "infer_compute_seconds", "infer_request_seconds", "infer_batch_size", "infer_requests_in_flight"}) {
    const std::string type = std::string("# TYPE ") + family + " ";
    const std::size_t at = text.find(type);
    ASSERT_NE(at, std::string::npos) << family;
    EXPECT_EQ(text.find(type, at + 1), std::string::npos) << family << " twice";
  }
  const auto s = samples(text);
  EXPECT_EQ(s.at("infer_requests_total{model=\"a\\\"b\\\\c\"}"), "5");
  EXPECT_EQ(s.at("infer_request_failures_total{model=\"second\",reason=\"queue_full\"}"), "1");
  EXPECT_EQ(s.at("infer_request_failures_total{model=\"second\",reason=\"invalid\"}"), "0");
  EXPECT_EQ(s.at("infer_requests_in_flight"), "2");
}

}  // namespace
}  // namespace infer::serve
