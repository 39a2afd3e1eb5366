#!/usr/bin/env bash
# What a concurrency limit costs next to a check, side by side in one run (bench/concurrency_bench.cc):
# a rate layer checked (Check), the same rate layer plus a concurrency layer taking a slot and
# releasing it (AcquireRelease: a reservation, then its settlement), and the acquire alone; on
# the memory store, then one request at a time against a fresh redis-server on loopback, where
# Redis' own CPU per request is read from INFO commandstats (every EVALSHA/EVAL the request made,
# µs). Then the memory each held ticket takes in the memory store.
# Usage: bench/compare_concurrency.sh [ROUNDS]   (docs/benchmarks.md, section 20)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}

cmake --preset release >/dev/null
cmake --build --preset release --target concurrency_bench >/dev/null
source bench/http_common.sh
start_redis
port=$redis_port

# The median ns per request of `kind` in a csv run.
median_ns() { grep "^\"$1/.*_median\"," | cut -d, -f3; }

printf '%-16s %16s %16s %18s\n' "" "memory ns/req" "Redis client µs" "Redis CPU µs/req"
for round in $(seq "$rounds"); do
  memory=$(build/release/bench/concurrency_bench --benchmark_filter='^(Check|AcquireRelease|Acquire)/' \
    --benchmark_format=csv 2>/dev/null)
  for kind in Check AcquireRelease Acquire; do
    redis-cli -p "$port" flushall >/dev/null
    redis-cli -p "$port" config resetstat >/dev/null
    out=$(SPILLWAY_BENCH_REDIS="redis://127.0.0.1:$port" build/release/bench/concurrency_bench \
      --benchmark_filter="^$kind/" --benchmark_format=csv 2>/dev/null)
    requests=$(echo "$out" | grep "^\"$kind/.*repeats:[0-9]*\"," | cut -d, -f2 | awk '{ s += $1 } END { print s }')
    usec=$(script_usec "$port")
    awk -v k="$kind" -v mem="$(echo "$memory" | median_ns "$kind")" \
      -v ns="$(echo "$out" | median_ns "$kind")" -v us="$usec" -v n="$requests" -v r="$round" \
      'BEGIN { printf "%-16s %16.0f %16.1f %18.2f   (round %d)\n", k, mem, ns / 1000, us / n, r }'
  done
done
build/release/bench/concurrency_bench --benchmark_filter='^HeldMemory' 2>/dev/null | grep HeldMemory
