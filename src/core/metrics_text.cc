// The Prometheus text writer (see metrics_text.h).
#include "src/core/metrics_text.h"

#include <cstdio>

#include "src/core/decimal.h"

namespace spillway {
namespace {

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void append_number(std::string& out, double value) {
  char text[32];
  const int length = std::snprintf(text, sizeof text, "%g", value);
  out.append(text, static_cast<std::size_t>(length));
}

// `name{a="x",b="y"` without the closing brace, or `name` alone when there are no labels and
// no `extra` label to come.
void append_series(std::string& out, std::string_view name, MetricLabels labels,
                   bool more_to_come) {
  out.append(name);
  if (labels.size() == 0 && !more_to_come) return;
  char separator = '{';
  for (const MetricLabel& label : labels) {
    out.push_back(separator);
    out.append(label.name).append("=\"");
    append_metric_label_value(out, label.value);
    out.push_back('"');
    separator = ',';
  }
  if (more_to_come) out.push_back(separator);
}

void close_series(std::string& out, MetricLabels labels) {
  if (labels.size() != 0) out.push_back('}');
  out.push_back(' ');
}

}  // namespace

void append_metric_label_value(std::string& out, std::string_view value) {
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
}

void append_metric_family(std::string& out, std::string_view name, MetricType type,
                          std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type_name(type)).append("\n");
}

// One sample line of an integer value (either signedness: append_decimal writes both).
template <typename Integer>
void append_integer_sample(std::string& out, std::string_view name, MetricLabels labels,
                           Integer value) {
  append_series(out, name, labels, false);
  close_series(out, labels);
  append_decimal(out, value);
  out.push_back('\n');
}

void append_metric_sample(std::string& out, std::string_view name, MetricLabels labels,
                          std::uint64_t value) {
  append_integer_sample(out, name, labels, value);
}

void append_metric_sample(std::string& out, std::string_view name, MetricLabels labels,
                          double value) {
  append_series(out, name, labels, false);
  close_series(out, labels);
  append_number(out, value);
  out.push_back('\n');
}

void append_metric_sample(std::string& out, std::string_view name, MetricLabels labels,
                          std::int64_t value) {
  append_integer_sample(out, name, labels, value);
}

void append_metric_histogram(std::string& out, std::string_view name, MetricLabels labels,
                             std::span<const Micros> bounds, std::span<const std::uint64_t> counts,
                             double sum_seconds) {
  const std::string bucket = std::string(name) + "_bucket";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    if (i < counts.size()) cumulative += counts[i];
    append_series(out, bucket, labels, true);
    out.append("le=\"");
    if (i < bounds.size()) {
      append_number(out, static_cast<double>(bounds[i]) / 1e6);
    } else {
      out.append("+Inf");
    }
    out.append("\"} ");
    append_decimal(out, cumulative);
    out.push_back('\n');
  }
  append_metric_sample(out, std::string(name) + "_sum", labels, sum_seconds);
  append_metric_sample(out, std::string(name) + "_count", labels, cumulative);
}

}  // namespace spillway
