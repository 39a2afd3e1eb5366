#include "src/server/metrics.h"

#include <sstream>
#include <string>
#include <string_view>

namespace spillway::server {
namespace {

// A label value as the text format wants it: backslash, double quote and newline escaped (an
// endpoint label comes from the request path, which may hold '"' and '\\').
std::string label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out.append(1, '\\').append(1, c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.append(1, c);
    }
  }
  return out;
}

}  // namespace

void Metrics::decision(const std::string& layer, bool allowed) {
  std::lock_guard lock(mutex_);
  ++decisions_[{layer, allowed}];
}

void Metrics::request(const std::string& endpoint, int status, Micros latency) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
  std::size_t bucket = 0;
  while (bucket < kBuckets.size() && latency > kBuckets[bucket]) ++bucket;
  ++latency_buckets_[bucket];
  ++latency_count_;
  latency_sum_seconds_ += static_cast<double>(latency) / 1e6;
}

void Metrics::backend_error(const std::string& kind) {
  std::lock_guard lock(mutex_);
  ++backend_errors_[kind];
}

std::string Metrics::render() const {
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  out << "# HELP spillway_decisions_total Layer decisions by result.\n"
      << "# TYPE spillway_decisions_total counter\n";
  for (const auto& [key, count] : decisions_) {
    out << "spillway_decisions_total{layer=\"" << label(key.first) << "\",result=\""
        << (key.second ? "allowed" : "denied") << "\"} " << count << "\n";
  }
  out << "# HELP spillway_requests_total HTTP requests by endpoint and status.\n"
      << "# TYPE spillway_requests_total counter\n";
  for (const auto& [key, count] : requests_) {
    out << "spillway_requests_total{endpoint=\"" << label(key.first) << "\",status=\"" << key.second
        << "\"} " << count << "\n";
  }
  out << "# HELP spillway_backend_errors_total Backend errors by kind.\n"
      << "# TYPE spillway_backend_errors_total counter\n";
  for (const auto& [kind, count] : backend_errors_) {
    out << "spillway_backend_errors_total{kind=\"" << label(kind) << "\"} " << count << "\n";
  }
  out << "# HELP spillway_request_duration_seconds Time to answer a request.\n"
      << "# TYPE spillway_request_duration_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += latency_buckets_[i];
    out << "spillway_request_duration_seconds_bucket{le=\""
        << static_cast<double>(kBuckets[i]) / 1e6 << "\"} " << cumulative << "\n";
  }
  out << "spillway_request_duration_seconds_bucket{le=\"+Inf\"} " << latency_count_ << "\n"
      << "spillway_request_duration_seconds_sum " << latency_sum_seconds_ << "\n"
      << "spillway_request_duration_seconds_count " << latency_count_ << "\n";
  return out.str();
}

}  // namespace spillway::server
