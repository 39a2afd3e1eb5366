// What a test needs, checked against what its ctest labels say (tests/CMakeLists.txt gives every
// test labels such as `unit`, `redis`, `cluster`, `nginx`, `cli`). ctest passes a test's labels
// in the environment variable SPILLWAY_TEST_LABELS (comma-separated); the support code that
// starts a redis-server, a cluster, a sentinel, nginx, the spillway binary or any other child
// process calls require_label() first, so a test that starts something its labels do not name
// fails with a message saying which label to add (and a `unit` test that starts anything fails).
// Run outside ctest (the variable unset), nothing is checked.
//
// A catch-all for what support code does not start (a test's own fork(), popen(), a shell
// command): when the labels hold `unit`, the test process checks at its end (a gtest global
// environment's TearDown, registered by test_labels.cc) that it had no child process at all, and
// fails naming the rule otherwise.
//
// Thread safety: any thread (reads the environment only; gtest's ADD_FAILURE is thread-safe).
#pragma once

#include <string_view>

namespace spillway::testing {

// Fails the running test (gtest ADD_FAILURE, the test goes on) when SPILLWAY_TEST_LABELS is set
// and does not hold `label` (an empty `label`: when it holds `unit`). `what` names what the test
// was about to start, for the message.
void require_label(std::string_view label, std::string_view what);

// The label of a program the tests start by path or name (its file name): redis-server ->
// "redis", nginx -> "nginx", haproxy -> "haproxy", prometheus / promtool -> "prometheus",
// openssl -> "tls", redis-cli -> "redis", redis-sentinel -> "sentinel"; any other -> "" (any
// label but `unit`).
std::string_view label_of_program(std::string_view path);

}  // namespace spillway::testing
