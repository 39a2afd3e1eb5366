// What a `spillway bench` run counted, in-process (bench.cc) or over HTTP (http_load.h): admitted,
// denied and failed requests, the first failure's words and the latencies. One per thread (or
// connection) while the run goes, added up after the threads have stopped.
//
// Thread safety: none; one object per thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "src/cli/latency_histogram.h"

namespace spillway::cli {

struct LoadTotals {
  std::int64_t admitted = 0;
  std::int64_t denied = 0;
  std::int64_t errors = 0;
  std::string first_error;     // the first error's words; empty when there was none
  LatencyHistogram latencies;  // ns, of the requests measured (see bench.cc, http_load.h)
  double seconds = 0;          // HTTP runs: from the first request to the last answer

  // One more error; the first one's words are kept.
  void error(std::string what) {
    if (errors++ == 0) first_error = std::move(what);
  }
  // Adds `other`'s counts and latencies (its first error if this has none yet); not `seconds`.
  void add(const LoadTotals& other) {
    admitted += other.admitted;
    denied += other.denied;
    errors += other.errors;
    if (first_error.empty()) first_error = other.first_error;
    latencies.merge(other.latencies);
  }
};

}  // namespace spillway::cli
