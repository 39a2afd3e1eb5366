// The metrics every Prometheus target is expected to have, for GET /metrics:
//   spillway_build_info{version="0.1.0"} 1
//   process_cpu_seconds_total          user + system CPU time of this process, in seconds
//   process_resident_memory_bytes      resident set size, in bytes
//   process_open_fds                   open file descriptors
//   process_start_time_seconds         when the process started, Unix time in seconds
// The process_* values are read from /proc/self (Linux) at each call; a value that cannot be read
// is left out (with its family), never guessed.
//
// Pure functions appending to a string the caller owns; thread-safe.
#pragma once

#include <string>

namespace spillway::server {

// spillway_build_info and the process_* families.
void append_process_metrics(std::string& out);

}  // namespace spillway::server
