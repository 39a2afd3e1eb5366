#!/usr/bin/env bash
# Side by side, in one run, wrk (2 threads, 64 connections) against:
#   nginx-get     nginx's own limit_req (1000r/m per client address) answering 200 itself, two
#                 worker processes (spillway runs two threads),
#                 wrk's built-in GET (no Lua): the cheapest possible load;
#   nginx-post    the same nginx, fed the exact request stream spillway gets (bench/check.lua);
#   memory        spillway serve, POST /v1/check, seed policy, in-memory store, access log on;
#   memory-nolog  the same with `access_log: off` (as the nginx config has);
#   redis         spillway on a Redis backend (fresh redis-server on loopback);
#   redis-lease   the same, every layer `sync: lease` (bench/seed_layers_lease.yaml): decided from
#                 quota leases in the process (docs/SPEC.md §2.3).
# Each round runs every target once, in turn; the table gives the median over the rounds of
# requests/s, p99, and the server's CPU per request (user + system, from /proc/PID/stat), which
# is what a noisy shared machine disturbs least.
# With BASELINE=path/to/an/older/spillway, that binary runs too (memory, access log on), for a
# before/after comparison in the same run.
# Usage: bench/compare_http.sh [SECONDS_PER_RUN] [ROUNDS]   (see docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
rounds=${2:-3}
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null

# $work, free_port, wait_port, pids, start_nginx (the limit_req yardstick).
source bench/http_common.sh
start_nginx
nginx_workers=""
for _ in $(seq 50); do
  nginx_workers=$(pgrep -f "nginx: worker process" -P "${pids[0]}" | paste -sd, || true)
  [ "$(echo "$nginx_workers" | tr ',' '\n' | grep -c .)" = 2 ] && break
  sleep 0.1
done

# spillway serve with the seed policy (the README's config) on a given backend and log setting.
serve() {  # name backend_url access_log [binary]
  local port binary=${4:-build/release/src/spillway} log=", access_log: $3"
  port=$(free_port)
  [ -n "${4:-}" ] && log=""  # a baseline may predate the setting; its log is always on
  cat > "$work/$1.yaml" <<CONF
server: {listen: "127.0.0.1:$port", threads: 2$log}
backend: {url: "$2"}
CONF
  cat "${LAYERS:-bench/seed_layers.yaml}" >> "$work/$1.yaml"
  "$binary" serve --config "$work/$1.yaml" >/dev/null 2>&1 &
  local pid=$!
  wait_port "$port"
  echo "$pid $port"
}

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --logfile "$work/redis.log" & pids+=($!)
wait_port "$redis_port"

read -r memory_pid memory_port < <(serve memory memory on)
read -r nolog_pid nolog_port < <(serve nolog memory off)
read -r redis_pid redis_api_port < <(serve redis "redis://127.0.0.1:$redis_port" on)
read -r lease_pid lease_port < <(LAYERS=bench/seed_layers_lease.yaml \
  serve redis-lease "redis://127.0.0.1:$redis_port" on)
pids+=("$memory_pid" "$nolog_pid" "$redis_pid" "$lease_pid")
if [ -n "${BASELINE:-}" ]; then
  read -r baseline_pid baseline_port < <(serve baseline memory on "$BASELINE")
  pids+=("$baseline_pid")
fi

# User + system time of comma-separated PIDs, in clock ticks.
ticks() {
  local files=()
  for p in ${1//,/ }; do files+=("/proc/$p/stat"); done
  awk '{ sum += $14 + $15 } END { print sum }' "${files[@]}"
}
hz=$(getconf CLK_TCK)
results="$work/results"
: > "$results"
measure() {  # name pid wrk-arguments...
  local name=$1 pid=$2 before after out
  shift 2
  before=$(ticks "$pid")
  out=$(wrk -t2 -c64 -d"${seconds}s" --latency "$@" 2>&1)
  after=$(ticks "$pid")
  WRK_OUT="$out" python3 - "$name" "$before" "$after" "$hz" "$seconds" <<'PY' >> "$results"
import os, re, sys
name, before, after, hz, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
out = os.environ["WRK_OUT"]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)
p99_ms = float(p99[:-2]) if p99.endswith("ms") else float(p99[:-2]) / 1000 if p99.endswith("us") else float(p99[:-1]) * 1000
cpu_us = (after - before) / hz * 1e6 / (rps * seconds)
print(name, rps, p99_ms, cpu_us)
PY
}

for round in $(seq "$rounds"); do
  echo "round $round of $rounds" >&2
  measure nginx-get "$nginx_workers" "http://127.0.0.1:$nginx_port/"
  measure nginx-post "$nginx_workers" -s bench/check.lua "http://127.0.0.1:$nginx_port"
  measure memory "$memory_pid" -s bench/check.lua "http://127.0.0.1:$memory_port"
  measure memory-nolog "$nolog_pid" -s bench/check.lua "http://127.0.0.1:$nolog_port"
  measure redis "$redis_pid" -s bench/check.lua "http://127.0.0.1:$redis_api_port"
  measure redis-lease "$lease_pid" -s bench/check.lua "http://127.0.0.1:$lease_port"
  if [ -n "${BASELINE:-}" ]; then
    measure baseline "$baseline_pid" -s bench/check.lua "http://127.0.0.1:$baseline_port"
  fi
done

python3 - "$results" "$seconds" "$rounds" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, rps, p99, cpu = line.split()
    rows.setdefault(name, []).append((float(rps), float(p99), float(cpu)))
med = {n: tuple(statistics.median(v[i] for v in r) for i in range(3)) for n, r in rows.items()}
labels = {
    "nginx-get": "nginx limit_req, GET (wrk without Lua)",
    "nginx-post": "nginx limit_req, spillway's POST stream",
    "memory": "spillway /v1/check, memory, access log on",
    "memory-nolog": "spillway /v1/check, memory, access log off",
    "redis": "spillway /v1/check, Redis, access log on",
    "redis-lease": "spillway /v1/check, Redis + leases, log on",
    "baseline": "BASELINE /v1/check, memory, access log on",
}
print(f"wrk -t2 -c64, {sys.argv[2]} s per run, median of {sys.argv[3]} interleaved rounds")
print(f"{'':46} {'requests/s':>11} {'p99 ms':>8} {'server CPU us/req':>18}")
for name in labels:
    if name in med:
        rps, p99, cpu = med[name]
        print(f"{labels[name]:46} {rps:11.0f} {p99:8.2f} {cpu:18.1f}")
for name in ("memory", "memory-nolog", "redis", "redis-lease", "baseline"):
    if name in med:
        print(f"ratio {name} / nginx-post: requests/s {med[name][0] / med['nginx-post'][0]:.2f}, "
              f"/ nginx-get: {med[name][0] / med['nginx-get'][0]:.2f}; "
              f"CPU per request {med[name][2] / med['nginx-post'][2]:.2f}x nginx's")
PY
