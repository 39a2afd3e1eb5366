#!/usr/bin/env bash
# What a reservation costs on Redis next to a check, side by side in one run: the LLM policy of
# bench/reservation_bench.cc (rpm + tpm, both layers in one all-or-nothing call) as a check, a
# reserve, and a reserve then a commit, one request at a time against a fresh redis-server on
# loopback. For each: the client's time per request (a round trip or two) and Redis' CPU per
# request, from INFO commandstats (all EVALSHA/EVAL calls the request made, in µs; the first
# call of each script is a NOSCRIPT and an EVAL, counted too). Client time: the median of 5
# repetitions of 20,000 requests; Redis CPU: all 100,000.
# Usage: bench/compare_reservations.sh [ROUNDS]   (docs/benchmarks.md, section 12)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}

cmake --preset release >/dev/null
cmake --build --preset release --target reservation_bench >/dev/null
source bench/http_common.sh
start_redis
port=$redis_port

printf '%-16s %14s %18s\n' "" "client µs/req" "Redis CPU µs/req"
for round in $(seq "$rounds"); do
  for kind in Check Reserve ReserveCommit; do
    redis-cli -p "$port" flushall >/dev/null
    redis-cli -p "$port" config resetstat >/dev/null
    out=$(SPILLWAY_BENCH_REDIS="redis://127.0.0.1:$port" build/release/bench/reservation_bench \
      --benchmark_filter="^$kind/" --benchmark_format=csv 2>/dev/null)
    # The repetitions' lines (their iterations add up to the requests made), and the median's.
    requests=$(echo "$out" | grep "^\"$kind/.*repeats:[0-9]*\"," | cut -d, -f2 | awk "{ s += \$1 } END { print s }")
    real_ns=$(echo "$out" | grep "_median\"," | cut -d, -f3)
    usec=$(script_usec "$port")
    awk -v k="$kind" -v ns="$real_ns" -v us="$usec" -v n="$requests" -v r="$round" \
      'BEGIN { printf "%-16s %14.1f %18.2f   (round %d)\n", k, ns / 1000, us / n, r }'
  done
done
