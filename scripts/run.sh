#!/usr/bin/env bash
# The run command: installs dependencies, builds spillway, and replays the sample trace through
# a GCRA limiter of 5 per second (burst 5) on the embedded in-memory store.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null
exec build/release/src/spillway replay --algorithm gcra --limit 5 --period 1s \
  "${@:-examples/traces/login-burst.csv}"
