#!/usr/bin/env bash
# The test command: installs dependencies, then builds and runs every test three times —
# a normal build with warnings as errors, ASan+UBSan, and ThreadSanitizer.
# Usage: scripts/test.sh [--quick]   (--quick: the normal build only)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

jobs=$(nproc)
run_preset() {
  local name=$1
  echo "== build and test: $name"
  cmake --preset "$name" >/dev/null
  cmake --build --preset "$name" -j "$jobs"
  ctest --preset "$name" -j "$jobs"
}

run_preset ci
# The README's run command builds the release preset: make sure it builds too.
echo "== build: release (scripts/run.sh)"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs" --target spillway_cli
if [ "${1:-}" != "--quick" ]; then
  run_preset asan
  run_preset tsan
fi
echo "== all test runs passed"
