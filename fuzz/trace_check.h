// The trace fuzz target's body (fuzz/trace_fuzz.cc), also run over the seed corpus by
// tests/server/fuzz_corpus_test.cc in the normal test build.
//
// The input is a trace file (`spillway replay` / `spillway simulate --trace`). Each line goes to
// parse_trace_line twice, and:
//   - the same line gives the same answer both times;
//   - an error is kInvalidArgument and one non-empty line;
//   - a parsed request has t_us in 0 … 2^52, a non-empty key without ',' and a cost ≥ 0.
// The parsed requests (at most 500) then go through simulate() with every algorithm, limit 3
// per second (burst 5 for the buckets), and:
//   - every algorithm is offered every request, and admitted + denied = offered;
//   - the series add up to the totals;
//   - once sorted by time, sliding_log, exact, never lets a key have more than the limit in
//     one period, and the others stay within twice the limit plus the burst;
//   - the summary has one line per algorithm, and the HTML report has no more <script elements
//     than its own, whatever the source name (the first line) holds.
// Anything else aborts (see check_util.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway::fuzz {

void check_trace_input(const std::uint8_t* data, std::size_t size);

}  // namespace spillway::fuzz
