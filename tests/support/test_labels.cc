#include "tests/support/test_labels.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <array>
#include <cstdlib>
#include <string>
#include <utility>

namespace spillway::testing {
namespace {

bool has_label(std::string_view labels, std::string_view label) {
  while (!labels.empty()) {
    const std::size_t comma = labels.find(',');
    if (labels.substr(0, comma) == label) return true;
    if (comma == std::string_view::npos) break;
    labels.remove_prefix(comma + 1);
  }
  return false;
}

// At the end of a `unit` test process: no child ran (none waited for, none still there).
class NoChildrenInUnitTests : public ::testing::Environment {
 public:
  void TearDown() override {
    const char* set = std::getenv("SPILLWAY_TEST_LABELS");
    if (set == nullptr || !has_label(set, "unit")) return;
    rusage children{};
    ::getrusage(RUSAGE_CHILDREN, &children);
    siginfo_t info{};
    // WNOWAIT: looks without reaping; ECHILD when there is no child at all.
    const bool alive = ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
    if (children.ru_minflt > 0 || alive) {
      ADD_FAILURE() << "a test labelled 'unit' ran a child process (a program, a shell command, "
                       "a server): give it the label of what it starts in tests/CMakeLists.txt";
    }
  }
};

[[maybe_unused]] const ::testing::Environment* const kNoChildren =
    ::testing::AddGlobalTestEnvironment(new NoChildrenInUnitTests);

}  // namespace

void require_label(std::string_view label, std::string_view what) {
  const char* set = std::getenv("SPILLWAY_TEST_LABELS");
  if (set == nullptr || (label.empty() ? !has_label(set, "unit") : has_label(set, label))) return;
  ADD_FAILURE() << "this test starts " << what << ", which needs the ctest label '"
                << (label.empty() ? "(any but unit)" : label) << "', but its labels are '" << set
                << "': add the test to a group with that label in tests/CMakeLists.txt (a "
                << "'unit' test starts no process or server)";
}

std::string_view label_of_program(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kLabels = {{
      {"redis-server", "redis"},
      {"redis-cli", "redis"},
      {"redis-sentinel", "sentinel"},
      {"nginx", "nginx"},
      {"haproxy", "haproxy"},
      {"prometheus", "prometheus"},
      {"promtool", "prometheus"},
      {"openssl", "tls"},
  }};
  for (const auto& [program, label] : kLabels) {
    if (name == program) return label;
  }
  return "";
}

}  // namespace spillway::testing
