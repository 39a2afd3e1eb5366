#!/usr/bin/env bash
# backend.durability: replicated against the default (async), side by side in one run: a fresh
# primary and its replica on loopback, `spillway bench` (release build) on the primary with 50
# checks in flight, batched (--batch 128, the default) and unbatched (--batch 1), with and
# without --durability replicated. Prints checks/s, p50 and p99 per run.
# Usage: bench/compare_durability.sh [SECONDS_PER_RUN] [ROUNDS]   (see docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
rounds=${2:-3}
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null
source bench/http_common.sh

start_redis
primary=$redis_port
replica=$(free_port)
mkdir -p "$work/replica"
redis-server --port "$replica" --bind 127.0.0.1 --save "" --appendonly no --dir "$work/replica" \
  --logfile "$work/replica.log" --replicaof 127.0.0.1 "$primary" &
pids+=($!)
for _ in $(seq 200); do
  redis-cli -p "$replica" info replication 2>/dev/null | grep -q "master_link_status:up" && break
  sleep 0.05
done
redis-cli -p "$replica" info replication | grep -q "master_link_status:up" ||
  { echo "the replica did not sync: $(cat "$work/replica.log")" >&2; exit 1; }

run() {  # $1 batch, $2 durability
  build/release/src/spillway bench --backend "redis://127.0.0.1:$primary" --algorithm gcra \
    --limit 1000000 --period 1s --keys 1000 --concurrency 50 --duration "${seconds}s" \
    --batch "$1" --durability "$2" --json |
    python3 -c 'import json, sys
r = json.load(sys.stdin)
print("%10.0f checks/s  p50 %6s us  p99 %6s us  errors %s"
      % (r["checks_per_second"], r["p50_us"], r["p99_us"], r["errors"]))'
}
for round in $(seq "$rounds"); do
  echo "== round $round of $rounds"
  for batch in 128 1; do
    for durability in async replicated; do
      printf 'batch %-3s %-10s ' "$batch" "$durability"
      run "$batch" "$durability"
    done
  done
done
