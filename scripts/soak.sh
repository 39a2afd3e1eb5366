#!/usr/bin/env bash
# The fault suite (tests/faults/, docs/reliability.md), longer: every phase of every fault
# schedule SCALE times as long (SPILLWAY_SOAK_SCALE), run again and again until MINUTES have
# passed (at least once), on loopback only: the redis-servers, sentinels, cluster nodes and
# `spillway serve` instances are the tests' own. Prints the fault table of every run (the rows
# docs/reliability.md shows) and exits 1 if any run failed.
# Usage: scripts/soak.sh [MINUTES] [SCALE]   (defaults: 10 minutes, scale 4)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
scale=${2:-4}
case "$minutes$scale" in *[!0-9]*) echo "usage: scripts/soak.sh [MINUTES] [SCALE]" >&2; exit 2 ;; esac
[ "$scale" -ge 1 ] || { echo "scripts/soak.sh: SCALE must be 1 or more (got $scale)" >&2; exit 2; }
scripts/setup.sh
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$(nproc)" --target spillway_tests spillway_cli >/dev/null

table=$(mktemp)
trap 'rm -f "$table"' EXIT
end=$((SECONDS + minutes * 60))
runs=0
failed=0
while :; do
  runs=$((runs + 1))
  echo "== soak run $runs (scale $scale)"
  if ! SPILLWAY_SOAK_SCALE=$scale SPILLWAY_FAULT_TABLE=$table \
      ctest --preset ci -L faults -j 2 --output-on-failure; then
    failed=$((failed + 1))
  fi
  [ "$SECONDS" -ge "$end" ] && break
done
echo
echo "| fault | backend | mode | requests | admitted | over the bound | fail-open | errors | recovery (ms) |"
echo "|---|---|---|---|---|---|---|---|---|"
sort "$table"
echo
echo "soak: $runs runs in $SECONDS s, $failed failed"
[ "$failed" -eq 0 ]
