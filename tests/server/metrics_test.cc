// The Prometheus text of GET /metrics.
#include "src/server/metrics.h"

#include <gtest/gtest.h>

namespace spillway::server {
namespace {

// Found by fuzz/request_fuzz.cc: the endpoint label is the request path, which may hold '"' and
// '\', and was written unescaped, breaking the line for any Prometheus parser.
TEST(Metrics, LabelValuesAreEscaped) {
  Metrics metrics;
  metrics.request("/v1/a\"b\\c\nd", 404, 10);
  metrics.decision("edge", true);
  const std::string text = metrics.render();
  EXPECT_NE(text.find(R"(spillway_requests_total{endpoint="/v1/a\"b\\c\nd",status="404"} 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(spillway_decisions_total{layer="edge",result="allowed"} 1)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace spillway::server
