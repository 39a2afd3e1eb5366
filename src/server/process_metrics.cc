// append_process_metrics (see process_metrics.h).
#include "src/server/process_metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "src/core/metrics_text.h"

namespace spillway::server {
namespace {

// The fields of /proc/self/stat after the command (its 3rd field first), or none.
std::optional<std::vector<std::string>> process_stat_fields() {
  std::ifstream file("/proc/self/stat");
  std::string text;
  if (!file || !std::getline(file, text)) return std::nullopt;
  const std::size_t close = text.rfind(')');  // the command may hold spaces and parentheses
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(std::move(field));
  return fields;
}

// The boot time (Unix seconds) from /proc/stat's btime line, read once (it never changes).
std::optional<std::uint64_t> boot_time_seconds() {
  static const std::optional<std::uint64_t> boot = []() -> std::optional<std::uint64_t> {
    std::ifstream file("/proc/stat");
    try {
      for (std::string line; std::getline(file, line);) {
        if (line.starts_with("btime ")) return std::stoull(line.substr(6));
      }
    } catch (...) {  // a /proc text not as documented: no start time
    }
    return std::nullopt;
  }();
  return boot;
}

std::optional<std::uint64_t> open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  std::uint64_t count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count > 0 ? count - 1 : 0;  // the directory being read is not one of the process's own
}

// A family of one sample without labels; `value` with two decimals (the shared writer's %g keeps
// six digits only, too few for a Unix time).
void single(std::string& out, std::string_view name, MetricType type, std::string_view help,
            double value) {
  append_metric_family(out, name, type, help);
  char text[64];
  const int length = std::snprintf(text, sizeof text, " %.2f\n", value);
  out.append(name).append(text, static_cast<std::size_t>(length));
}

}  // namespace

void append_process_metrics(std::string& out) {
  append_metric_family(out, "spillway_build_info", MetricType::kGauge,
                       "Always 1; the labels name the build.");
  append_metric_sample(out, "spillway_build_info", {{"version", SPILLWAY_VERSION}},
                       std::uint64_t{1});
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const long page = ::sysconf(_SC_PAGESIZE);
  try {
    // After the command: state is [0], utime [11], stime [12], starttime [19], rss [21].
    if (const auto fields = process_stat_fields(); fields && fields->size() > 21 && ticks > 0) {
      const double cpu =
          static_cast<double>(std::stoull((*fields)[11]) + std::stoull((*fields)[12])) / ticks;
      single(out, "process_cpu_seconds_total", MetricType::kCounter,
             "Total user and system CPU time spent in seconds.", cpu);
      if (page > 0) {
        single(out, "process_resident_memory_bytes", MetricType::kGauge,
               "Resident memory size in bytes.",
               static_cast<double>(std::stoull((*fields)[21])) * static_cast<double>(page));
      }
      if (const auto boot = boot_time_seconds()) {
        single(
            out, "process_start_time_seconds", MetricType::kGauge,
            "Start time of the process since unix epoch in seconds.",
            static_cast<double>(*boot) + static_cast<double>(std::stoull((*fields)[19])) / ticks);
      }
    }
  } catch (...) {  // a /proc text not as documented: those families are left out
  }
  if (const auto fds = open_fds()) {
    single(out, "process_open_fds", MetricType::kGauge, "Number of open file descriptors.",
           static_cast<double>(*fds));
  }
}

}  // namespace spillway::server
