// Writing Prometheus' text exposition format (0.0.4), the one writer every /metrics producer
// uses (the server's counters, the gRPC listener, the rate limit service, the store wrappers,
// the backends, the tenant directories):
//   # HELP <name> <help>
//   # TYPE <name> counter|gauge|histogram
//   <name>{<label>="<value>",…} <value>
// Label values are escaped as the format wants (\\, \" and \n); names, help texts and label
// names are the callers' constants and are written as they are. Integers are written in
// decimal, other numbers as printf's %g (six significant digits: "2.5e-05", "0.001", "1").
//
// Pure functions appending to a string the caller owns; thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "spillway/duration.h"

namespace spillway {

enum class MetricType { kCounter, kGauge, kHistogram };

// One label: its name and its value (escaped when written).
struct MetricLabel {
  std::string_view name;
  std::string_view value;
};
using MetricLabels = std::initializer_list<MetricLabel>;

// A family's "# HELP" and "# TYPE" lines, written once before its samples.
void append_metric_family(std::string& out, std::string_view name, MetricType type,
                          std::string_view help);

// One sample line: `name`, the labels in braces (none: no braces), the value.
void append_metric_sample(std::string& out, std::string_view name, MetricLabels labels,
                          std::uint64_t value);
void append_metric_sample(std::string& out, std::string_view name, MetricLabels labels,
                          double value);
// A signed integer (a sequence number read from elsewhere), in decimal with its sign.
void append_metric_sample(std::string& out, std::string_view name, MetricLabels labels,
                          std::int64_t value);

// A histogram's samples (its family written before): name_bucket with le="<bound in seconds>"
// after `labels`, cumulative, for each of `bounds` (µs, ascending) and then "+Inf";
// name_sum (`sum_seconds`) and name_count (every observation). `counts` holds the observations
// per bucket, not cumulative: one per bound and one more for those above the last bound.
void append_metric_histogram(std::string& out, std::string_view name, MetricLabels labels,
                             std::span<const Micros> bounds, std::span<const std::uint64_t> counts,
                             double sum_seconds);

// A label value as the text format wants it: backslash, double quote and newline escaped.
void append_metric_label_value(std::string& out, std::string_view value);

}  // namespace spillway
