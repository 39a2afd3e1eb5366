// The one list of spillway's algorithms. Everything that depends on the set of algorithms is
// derived from it: the Algorithm enum and its names (spillway/algorithm.h), the memory store's
// tables, the Redis scripts and the all-or-nothing script's id table (cmake/embed_lua.cmake reads
// this file), and the tests that run every algorithm.
//
// One line per algorithm: X(enumerator, name, takes_burst)
//   enumerator   the Algorithm enumerator; its position in the list is the algorithm's number
//   name         its name in configs, on the command line and in Redis keys; also the names of
//                src/core/<name>.{h,cc}, lua/<name>.lua and that script's decide_<name>
//   takes_burst  whether a burst B (other than the limit L) may be given
// Adding an algorithm: the C++ pair, the Lua file, and one line here (docs/ARCHITECTURE.md).
// Keep each entry on its own line in exactly this form: the build parses it.
#pragma once

// clang-format off
#define SPILLWAY_ALGORITHMS(X)                \
  X(kFixedWindow, fixed_window, false)        \
  X(kSlidingLog, sliding_log, false)          \
  X(kSlidingWindow, sliding_window, false)    \
  X(kTokenBucket, token_bucket, true)         \
  X(kGcra, gcra, true)
// clang-format on
