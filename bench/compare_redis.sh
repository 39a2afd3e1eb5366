#!/usr/bin/env bash
# Side by side, in one run, against one fresh redis-server on loopback:
#   1. redis-benchmark calling spillway's GCRA script by EVALSHA (50 clients, pipeline 16),
#   2. spillway bench, Redis backend, 50 checks in flight, one check per script call (--batch 1),
#   3. the same with batching (checks waiting behind in-flight calls share one script call),
#   4. rate-limiter-flexible (npm) RateLimiterRedis with ioredis auto-pipelining, 50 in flight.
# Usage: bench/compare_redis.sh [SECONDS] [IN_FLIGHT]   (default 10 s, 50 in flight; prints a
# table; see docs/benchmarks.md). redis-benchmark always runs 50 clients with pipeline 16.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
concurrency=${2:-50}
keys=10000

scripts/setup.sh
command -v node >/dev/null || { echo "compare_redis: node is required for rate-limiter-flexible"; exit 1; }
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli print_script >/dev/null
(cd bench/node && npm install --silent --no-audit --no-fund >/dev/null)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
workdir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$workdir" \
  --daemonize yes --pidfile "$workdir/redis.pid" --logfile "$workdir/redis.log"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$workdir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done

# Redis' own CPU (user + sys seconds, INFO cpu) around each client's run: µs of Redis CPU per
# check, and how much of one core Redis used (near 100 %: Redis is the limit, not the client).
redis_cpu() {
  redis-cli -p "$port" info cpu | tr -d '\r' |
    awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.6f\n", s }'
}
measured() {  # name, command...: runs it, prints its output plus redis_cpu_s and wall_s lines
  local before after start end
  before=$(redis_cpu); start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N); after=$(redis_cpu)
  echo "redis_cpu_s=$(python3 -c "print($after - $before)")"
  echo "wall_s=$(python3 -c "print($end - $start)")"
}

# The exact script spillway sends (bench/print_script), 100/s per key, burst 100.
sha=$(build/release/bench/print_script gcra | redis-cli -p "$port" -x SCRIPT LOAD)
requests=$((seconds * 60000))
rb_cpu_before=$(redis_cpu)
rb=$(redis-benchmark -p "$port" -c 50 -n $requests -P 16 -r $keys --csv \
       EVALSHA "$sha" 1 'bench:{__rand_int__}' '' 0 100 1000000 100 1 10000 0 0 1 | tail -1 |
     cut -d, -f2 | tr -d '"')
rb_cpu=$(python3 -c "print($(redis_cpu) - $rb_cpu_before)")

spillway() {
  build/release/src/spillway bench --backend "redis://127.0.0.1:$port" --algorithm gcra \
    --limit 100 --period 1s --concurrency $concurrency --keys $keys --duration "${seconds}s" "$@"
}
field() { grep "^$1=" | cut -d= -f2; }
unbatched=$(measured spillway --batch 1)
batched=$(measured spillway --batch 128)
rlf=$(measured node bench/node/rlf_bench.js "$port" $concurrency $keys "$seconds")

# Redis µs per check and Redis' share of one core: CPU seconds / checks, CPU seconds / wall.
per_check() { python3 -c "print(f'{1e6 * $1 / $2:.2f}')"; }
core_share() { python3 -c "print(f'{100 * $1 / $2:.0f} %')"; }
printf '%-50s %10s %8s %8s %13s %10s\n' "client (gcra 100/s per key, $keys keys, $concurrency in flight)" \
  "checks/s" "p50 µs" "p99 µs" "Redis µs/chk" "Redis CPU"
printf '%-50s %10.0f %8s %8s %13s %10s\n' "redis-benchmark EVALSHA, pipeline 16" "$rb" "-" "-" \
  "$(per_check "$rb_cpu" "$requests")" "$(core_share "$rb_cpu" "$(python3 -c "print($requests / $rb)")")"
for row in "spillway, one check per script call|$unbatched" "spillway, batched script calls|$batched" \
           "rate-limiter-flexible + ioredis auto-pipelining|$rlf"; do
  name=${row%%|*}; out=${row#*|}
  rate=$(echo "$out" | field checks_per_second); wall=$(echo "$out" | field wall_s)
  cpu=$(echo "$out" | field redis_cpu_s)
  printf '%-50s %10s %8s %8s %13s %10s\n' "$name" "$rate" "$(echo "$out" | field p50_us)" \
    "$(echo "$out" | field p99_us)" "$(per_check "$cpu" "$(python3 -c "print($rate * $wall)")")" \
    "$(core_share "$cpu" "$wall")"
done
batched_rate=$(echo "$batched" | field checks_per_second)
unbatched_rate=$(echo "$unbatched" | field checks_per_second)
rlf_rate=$(echo "$rlf" | field checks_per_second)
python3 - "$rb" "$unbatched_rate" "$batched_rate" "$rlf_rate" <<'PY'
import sys
rb, unbatched, batched, rlf = map(float, sys.argv[1:])
print(f"ratios: spillway unbatched / redis-benchmark = {unbatched / rb:.2f}, "
      f"batched / redis-benchmark = {batched / rb:.2f}, batched / rate-limiter-flexible = "
      f"{batched / rlf:.2f}, batching gain = {batched / unbatched:.2f}x")
PY
