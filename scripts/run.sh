#!/usr/bin/env bash
# The run command: installs dependencies, builds spillway, and serves the seed policy of the
# source article on the embedded in-memory store at 127.0.0.1:8080 (Ctrl-C stops it cleanly).
# Arguments are passed to `spillway serve` (e.g. --listen 0.0.0.0:8080 --config spillway.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null
exec build/release/src/spillway serve "$@"
