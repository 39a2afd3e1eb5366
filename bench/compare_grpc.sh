#!/usr/bin/env bash
# Envoy's rate limit service over gRPC, side by side in one run: bench/rls_load (grpc++ callback
# client, 50 calls in flight) against `spillway serve --grpc-listen`, ROUNDS rounds of SECONDS
# each, alternating:
#   memory        in-process store, 1,000 descriptor values, 1,000,000/hour each (all admitted)
#   redis         the same on a local redis-server
#   redis-over    10 values limited to 10/hour: after the first 100 calls, every call is denied
#   redis-cached  the same with backend.over_limit_cache: 10000 (denials answered locally)
# For each: calls/s, p50/p99 latency, and Redis script calls per gRPC call (INFO commandstats).
# Usage: bench/compare_grpc.sh [SECONDS] [ROUNDS]   (see docs/benchmarks.md)
#        SPILLWAY_BUILD=ci bench/compare_grpc.sh …  uses build/ci's binaries instead of building
#        the release preset
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
rounds=${2:-3}
build=${SPILLWAY_BUILD:-release}
if [ "$build" = release ]; then
  scripts/setup.sh
  cmake --preset release >/dev/null
  cmake --build --preset release --target spillway_cli rls_load >/dev/null
fi
bin=build/$build/src/spillway
load=build/$build/bench/rls_load

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --logfile "$work/redis.log" &
pids+=($!)
until redis-cli -p "$redis_port" ping >/dev/null 2>&1; do sleep 0.05; done

rules=$PWD/bench/rls_rules  # domain "bench": descriptors `open` and `hot`

script_calls() {
  redis-cli -p "$redis_port" info commandstats |
    awk -F'[=,:]' '/^cmdstat_(evalsha|eval):/ { n += $3 } END { print n + 0 }'
}

# run NAME BACKEND KEY VALUES CACHE
run() {
  local name=$1 backend=$2 key=$3 values=$4 cache=$5 port config out before after
  port=$(free_port)
  config=$work/$name.yaml
  printf 'server: {access_log: off, grpc_listen: "127.0.0.1:%s"}\nbackend: {url: "%s", over_limit_cache: %s}\nrls: {config: "%s"}\n' \
    "$port" "$backend" "$cache" "$rules" > "$config"
  redis-cli -p "$redis_port" flushall >/dev/null
  "$bin" serve --config "$config" --listen 127.0.0.1:0 2>"$work/$name.log" &
  local pid=$!
  until grep -q "gRPC rate limit service listening" "$work/$name.log"; do
    kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log"; exit 1; }
    sleep 0.05
  done
  redis-cli -p "$redis_port" config resetstat >/dev/null
  before=$(script_calls)
  out=$("$load" "127.0.0.1:$port" bench "$key" "$values" 50 "$seconds")
  after=$(script_calls)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  local calls
  calls=$(echo "$out" | sed -n 's/.*ok=\([0-9]*\) over_limit=\([0-9]*\).*/\1 \2/p' | awk '{print $1 + $2}')
  echo "$name $out redis_script_calls=$((after - before)) grpc_calls=$calls"
}

results=$work/results
for round in $(seq 1 "$rounds"); do
  echo "== round $round"
  run memory memory open 1000 0 | tee -a "$results"
  run redis "redis://127.0.0.1:$redis_port" open 1000 0 | tee -a "$results"
  run redis-over "redis://127.0.0.1:$redis_port" hot 10 0 | tee -a "$results"
  run redis-cached "redis://127.0.0.1:$redis_port" hot 10 10000 | tee -a "$results"
done

echo "== mean over $rounds rounds of ${seconds}s (50 calls in flight)"
awk '{
  n[$1]++
  for (i = 2; i <= NF; i++) { split($i, kv, "="); v[$1, kv[1]] += kv[2] }
} END {
  printf "%-13s %12s %8s %8s %22s\n", "run", "calls/s", "p50_us", "p99_us", "redis calls per call"
  split("memory redis redis-over redis-cached", order, " ")
  for (k = 1; k <= 4; k++) {
    r = order[k]
    if (!n[r]) continue
    printf "%-13s %12.0f %8.0f %8.0f %22.3f\n", r, v[r, "calls_per_second"] / n[r],
           v[r, "p50_us"] / n[r], v[r, "p99_us"] / n[r],
           v[r, "grpc_calls"] ? v[r, "redis_script_calls"] / v[r, "grpc_calls"] : 0
  }
}' "$results"
