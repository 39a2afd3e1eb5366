#!/usr/bin/env bash
# The test command: installs dependencies, then builds and runs every test three times —
# a normal build with warnings as errors, ASan+UBSan, and ThreadSanitizer — and runs the
# libFuzzer targets for 60 s each (scripts/fuzz.sh).
# Usage: scripts/test.sh [--quick]   (--quick: the normal build only, no fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --browser

jobs=$(nproc)
passed=0
run_preset() {
  local name=$1 log
  echo "== build and test: $name"
  cmake --preset "$name" >/dev/null
  cmake --build --preset "$name" -j "$jobs"
  log=$(mktemp)
  ctest --preset "$name" -j "$jobs" | tee "$log"  # set -o pipefail: a failing ctest stops here
  passed=$((passed + $(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$log")))
  rm -f "$log"
}

run_preset ci
# The README's run command builds the release preset: make sure it builds too.
echo "== build: release (scripts/run.sh)"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs" --target spillway_cli
if [ "${1:-}" != "--quick" ]; then
  run_preset asan
  run_preset tsan
  # Coverage-guided fuzzing of the request parser, the config loader, the Redis URL parsers and
  # the Envoy rules loader, 60 s each.
  # A fixed seed: the same code fuzzes the same way here and on a developer's machine.
  FUZZ_SEED=1 scripts/fuzz.sh 60
fi
echo "== all test runs passed"
echo "tests: $passed passed, 0 failed"
