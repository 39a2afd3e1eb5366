#!/usr/bin/env bash
# Remakes the pictures of README.md and docs/observability.md in docs/images/ (tests/browser/pictures.mjs): a chart and the
# report of `spillway simulate` on examples/traces/api-spikes.csv, and the live dashboard of
# `spillway serve` under 30 s of traffic, drawn by headless Chromium. Not part of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --browser
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null
SPILLWAY_BINARY="$PWD/build/release/src/spillway" SPILLWAY_ARTIFACTS="$PWD/docs/images" \
  node tests/browser/pictures.mjs
ls -l docs/images
