#!/usr/bin/env bash
# GET /v1/auth with and without delays, side by side in one run (docs/benchmarks.md, "Shaping"):
# wrk (2 threads, CONNECTIONS connections, one client address) against spillway serve on the
# in-process store, with one layer keyed by ip:
#   plain     gcra 1000000/s: nothing is ever delayed (the cost of a /v1/auth decision);
#   shaped    gcra RATE/s, burst 1, max_delay 10s: every request past the first waits its turn,
#             so the CONNECTIONS requests in flight are held at once (about CONNECTIONS/RATE s each).
# Reported per target: requests/s, wrk's p50/p99 latency (the hold included), the server's CPU
# per request (user + system from /proc/PID/stat), the answers held at the end (the
# spillway_delayed_held gauge, sampled mid-run) and the resident memory then, so that
# (RSS shaped - RSS plain) / held is the memory one held answer costs.
# Usage: bench/shaping_auth.sh [SECONDS] [CONNECTIONS] [RATE]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
connections=${2:-1000}
rate=${3:-2000}
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null
source bench/http_common.sh
ulimit -n 65536 2>/dev/null || true

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

run() {  # name limit max_delay_line
  local name=$1 port pid
  port=$(free_port)
  cat > "$work/$name.yaml" <<YAML
server: {listen: 127.0.0.1:$port, access_log: off, max_delayed: 100000}
layers:
  - name: smooth
    key: [ip]
    algorithm: gcra
    limit: $2/s
    burst: 1
$3
YAML
  build/release/src/spillway serve --config "$work/$name.yaml" 2>"$work/$name.log" &
  pid=$!
  pids+=("$pid")
  wait_port "$port"
  local before after held rss
  before=$(cpu_ticks "$pid")
  wrk -t 2 -c "$connections" -d "${seconds}s" --latency "http://127.0.0.1:$port/v1/auth" \
    > "$work/$name.wrk" &
  local wrk_pid=$!
  sleep "$(awk -v s="$seconds" 'BEGIN {print s / 2}')"
  held=$(curl -s "http://127.0.0.1:$port/metrics" | awk '$1 == "spillway_delayed_held" {print $2}')
  rss=$(rss_kb "$pid")
  wait "$wrk_pid"
  after=$(cpu_ticks "$pid")
  local rps p50 p99 cpu
  read -r rps p50 p99 cpu < <(wrk_figures "$work/$name.wrk" "$before" "$after")
  printf '%-8s %10s req/s  p50 %8s  p99 %8s  CPU/request %6.1f us  held %6s  RSS %7s kB\n' \
    "$name" "$rps" "$p50" "$p99" "$cpu" "${held:-0}" "$rss"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

echo "wrk -t 2 -c $connections, ${seconds}s each, one client address; shaped: $rate/s, burst 1"
run plain 1000000 ""
run shaped "$rate" "    max_delay: 10s"
