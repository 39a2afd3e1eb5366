#include "src/cli/human_duration.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace spillway::cli {

namespace {

// `value` with one decimal, ".0" dropped, then " " and the unit.
std::string one_decimal(double value, const char* unit) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", value);
  std::string out = text;
  if (out.ends_with(".0")) out.resize(out.size() - 2);
  return out + " " + unit;
}

}  // namespace

std::string human_duration(Micros d) {
  if (d < 0) return "-" + human_duration(d == INT64_MIN ? INT64_MAX : -d);
  const double us = static_cast<double>(d);
  if (d < 1000) return std::to_string(d) + " us";
  if (d < 1'000'000) return one_decimal(us / 1e3, "ms");
  if (d < 60'000'000) return one_decimal(us / 1e6, "s");
  if (d < 3'600'000'000) return one_decimal(us / 60e6, "min");
  if (d < 86'400'000'000) return one_decimal(us / 3600e6, "h");
  return one_decimal(us / 86400e6, "d");
}

}  // namespace spillway::cli
