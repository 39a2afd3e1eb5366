#!/usr/bin/env bash
# The test command: installs dependencies, then builds and runs every test three times —
# a normal build with warnings as errors, ASan+UBSan, and ThreadSanitizer — and runs the
# libFuzzer targets for 45 s each (scripts/fuzz.sh). The fuzz targets build at nice 19 while the
# tsan tests run. Prints how long each phase took.
# Usage: scripts/test.sh [--quick]
#   --quick: builds the test binary (ci preset) and runs the unit tests only (`ctest --preset ci
#            -L unit`: no redis-server, no child process; under a minute once built).
# One backend's tests alone, after a build: `ctest --preset ci -L redis` (or cluster, sentinel,
# tls, cli, nginx, haproxy, prometheus, grpc, browser, install, package, container; see
# tests/CMakeLists.txt).
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
  # Everything apt installs, at once (clang-16 and libFuzzer for the fuzz stage too): nothing
  # runs apt-get later, beside the package test's dpkg.
  scripts/setup.sh --browser clang-16 libfuzzer-16-dev
  end_phase "setup"
  # SPILLWAY_TEST_JOBS: ctest's -j (default: the number of cores; docs/benchmarks.md, section 9).
  test_jobs=${SPILLWAY_TEST_JOBS:-$jobs}
  # The fuzz targets build at nice 19 beside the tsan tests, which spend much of their time
  # waiting on redis-server, nginx and child processes; the build is waited for before fuzzing,
  # and a failure prints its log and stops the run. (The release CLI of the README's run command
  # is not built here: the ci preset compiles the same sources with warnings as errors.)
  background=0
  background_log=build/background-build.log
  start_background() {
    mkdir -p build
    echo "== build (nice 19, beside the tests): $1"
    (nice -n 19 bash -c "$2") >"$background_log" 2>&1 &
    background=$!
  }
  wait_background() {
    [ "$background" -eq 0 ] && return 0
    if ! wait "$background"; then
      echo "== background build failed:"
      cat "$background_log"
      exit 1
    fi
    background=0
  }
  for preset in ci asan tsan; do
    echo "== build: $preset"
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset" -j "$jobs"
    check_labels "$preset"
    end_phase "build $preset"
    beside=""
    if [ "$preset" = tsan ]; then
      start_background "fuzz targets" "scripts/fuzz.sh --build"
      beside=" (the fuzz build beside it)"
    fi
    echo "== test: $preset"
    run_ctest --preset "$preset" -j "$test_jobs"
    end_phase "ctest $preset$beside"
  done
  wait_background
  end_phase "rest of the fuzz build"
  # Coverage-guided fuzzing of the request parser, the config loader, the Redis URL parsers, the
  # Envoy rules loader, the trace reader and the tenant records (stored form, admin API bodies,
  # journals), 45 s each (60 until the test phases grew past the 45-minute target; the targets
  # run two at a time, in 3 rounds: 45 s back).
  # A fixed seed: the same code fuzzes the same way here and on a developer's machine.
  FUZZ_SEED=1 scripts/fuzz.sh 45
  end_phase "fuzz (6 targets x 45 s)"
fi
echo "== all test runs passed"
echo "tests: $passed passed, 0 failed"
echo "time per phase:"
printf '%s\n' "${phases[@]}"
echo "$(printf '%5ds' "$SECONDS")  in all"
