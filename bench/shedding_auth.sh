#!/usr/bin/env bash
# What a priority costs a GET /v1/auth decision (docs/benchmarks.md, "Shedding"): wrk (2 threads,
# CONNECTIONS connections, one client address) against spillway serve on the in-process store,
# side by side in one run, one layer keyed by ip at 1000000/s (nothing is ever denied):
#   plain      no priorities;
#   priority   levels [critical, normal, sheddable], the layer keeping 20 % for critical and 30 %
#              more for normal; every request says X-Spillway-Priority: sheddable, so it is
#              decided on its level's view of the limit (built once per policy, not per request).
# Reported per target: requests/s, wrk's p50/p99 latency and the server's CPU per request (user +
# system from /proc/PID/stat).
# Usage: bench/shedding_auth.sh [SECONDS] [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
connections=${2:-100}
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null
source bench/http_common.sh


run() {  # name priority_section reserve_line header
  local name=$1 port pid
  port=$(free_port)
  cat > "$work/$name.yaml" <<YAML
server: {listen: 127.0.0.1:$port, access_log: off, trusted_proxies: [127.0.0.1/32]}
$2
layers:
  - name: edge
    key: [ip]
    algorithm: gcra
    limit: 1000000/s
$3
YAML
  build/release/src/spillway serve --config "$work/$name.yaml" 2>"$work/$name.log" &
  pid=$!
  pids+=("$pid")
  wait_port "$port"
  local before after
  before=$(cpu_ticks "$pid")
  wrk -t 2 -c "$connections" -d "${seconds}s" --latency -H "$4" \
    "http://127.0.0.1:$port/v1/auth" > "$work/$name.wrk"
  after=$(cpu_ticks "$pid")
  local rps p50 p99 cpu non2xx
  read -r rps p50 p99 cpu < <(wrk_figures "$work/$name.wrk" "$before" "$after")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$work/$name.wrk")
  printf '%-9s %10s req/s  p50 %8s  p99 %8s  CPU/request %6.1f us  non-2xx %s\n' \
    "$name" "$rps" "$p50" "$p99" "$cpu" "${non2xx:-0}"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

echo "wrk -t 2 -c $connections, ${seconds}s each, one client address, gcra 1000000/s"
run plain "" "" "X-Spillway-Priority: sheddable"
run priority "priority: {levels: [critical, normal, sheddable], default: normal}" \
  "    reserve: {critical: 20%, normal: 30%}" "X-Spillway-Priority: sheddable"
run plain "" "" "X-Spillway-Priority: sheddable"
run priority "priority: {levels: [critical, normal, sheddable], default: normal}" \
  "    reserve: {critical: 20%, normal: 30%}" "X-Spillway-Priority: sheddable"
