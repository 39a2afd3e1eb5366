#!/usr/bin/env bash
# The test command: installs dependencies, then builds and runs every test three times —
# a normal build with warnings as errors, ASan+UBSan, and ThreadSanitizer — and runs the
# libFuzzer targets for 60 s each (scripts/fuzz.sh). Prints how long each phase took.
# Usage: scripts/test.sh [--quick]
#   --quick: builds the test binary (ci preset) and runs the unit tests only (`ctest --preset ci
#            -L unit`: no redis-server, no child process; under a minute once built).
# One backend's tests alone, after a build: `ctest --preset ci -L redis` (or cluster, sentinel,
# tls, cli, nginx, haproxy, prometheus, grpc, browser, install, package; see tests/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
case "${1:-}" in
  "") ;;
  --quick) quick=true ;;
  *)
    echo "usage: scripts/test.sh [--quick]" >&2
    exit 2
    ;;
esac

jobs=$(nproc)
passed=0
phases=()
phase_started=$SECONDS
# Ends the phase that started at phase_started, naming it; starts the next.
end_phase() {
  phases+=("$(printf '%5ds  %s' $((SECONDS - phase_started)) "$1")")
  phase_started=$SECONDS
}
# Every test of a built tree has labels, each a known one (tests/CMakeLists.txt).
check_labels() {
  local dir=build/$1
  node tests/support/node/check_labels.mjs "$(command -v ctest)" "$dir" \
    $(tr ';' ' ' <"$dir/test_labels.txt")
}
# ctest with the preset's settings; adds its "N tests passed" to the total.
run_ctest() {
  local log
  log=$(mktemp)
  ctest "$@" | tee "$log"  # set -o pipefail: a failing ctest stops here
  passed=$((passed + $(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$log")))
  rm -f "$log"
}

if "$quick"; then
  scripts/setup.sh
  end_phase "setup"
  echo "== build: ci (test binary)"
  cmake --preset ci >/dev/null
  cmake --build --preset ci -j "$jobs" --target spillway_tests
  check_labels ci
  end_phase "build ci (test binary)"
  echo "== test: ci, unit tests"
  run_ctest --preset ci -L unit -j "$jobs"
  end_phase "ctest ci -L unit"
else
  scripts/setup.sh --browser
  end_phase "setup"
  # SPILLWAY_TEST_JOBS: ctest's -j (default: the number of cores; docs/benchmarks.md, section 9).
  test_jobs=${SPILLWAY_TEST_JOBS:-$jobs}
  for preset in ci asan tsan; do
    echo "== build: $preset"
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset" -j "$jobs"
    check_labels "$preset"
    end_phase "build $preset"
    echo "== test: $preset"
    run_ctest --preset "$preset" -j "$test_jobs"
    end_phase "ctest $preset"
    if [ "$preset" = ci ]; then
      # The README's run command builds the release preset: make sure it builds too.
      echo "== build: release (scripts/run.sh)"
      cmake --preset release >/dev/null
      cmake --build --preset release -j "$jobs" --target spillway_cli
      end_phase "build release (spillway_cli)"
    fi
  done
  # Coverage-guided fuzzing of the request parser, the config loader, the Redis URL parsers, the
  # Envoy rules loader, the trace reader and the tenant records (stored form, admin API bodies,
  # journals), 60 s each.
  # A fixed seed: the same code fuzzes the same way here and on a developer's machine.
  FUZZ_SEED=1 scripts/fuzz.sh 60
  end_phase "fuzz (clang-16 build + 6 targets x 60 s)"
fi
echo "== all test runs passed"
echo "tests: $passed passed, 0 failed"
echo "time per phase:"
printf '%s\n' "${phases[@]}"
echo "$(printf '%5ds' "$SECONDS")  in all"
