#!/usr/bin/env bash
# Side by side, in one run, wrk (2 threads, 64 connections) against:
#   1. nginx's own limit_req (1000r/m per client address) answering 200 itself,
#   2. spillway serve, POST /v1/check, seed policy, in-memory store,
#   3. the same on a Redis backend (fresh redis-server on loopback).
# Usage: bench/compare_http.sh [SECONDS]   (see docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
wait_port() { for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }

nginx_port=$(free_port)
cat > "$work/nginx.conf" <<CONF
daemon off; worker_processes 1; pid $work/nginx.pid; error_log $work/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work;
  uwsgi_temp_path $work; scgi_temp_path $work;
  limit_req_zone \$binary_remote_addr zone=edge:10m rate=1000r/m;
  server {
    listen 127.0.0.1:$nginx_port;
    location / { limit_req zone=edge burst=1000 nodelay; limit_req_status 429; return 200 "ok\n"; }
  }
}
CONF
/usr/sbin/nginx -c "$work/nginx.conf" -p "$work" & pids+=($!)
wait_port "$nginx_port"

memory_port=$(free_port)
build/release/src/spillway serve --listen "127.0.0.1:$memory_port" 2>"$work/memory.log" & pids+=($!)
wait_port "$memory_port"

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --logfile "$work/redis.log" & pids+=($!)
wait_port "$redis_port"
redis_api_port=$(free_port)
build/release/src/spillway serve --listen "127.0.0.1:$redis_api_port" \
  --backend "redis://127.0.0.1:$redis_port" 2>"$work/redis-api.log" & pids+=($!)
wait_port "$redis_api_port"

run() { wrk -t2 -c64 -d"${seconds}s" --latency "$@" 2>&1; }
rps() { grep "Requests/sec" | awk '{print $2}'; }
p99() { grep -E "^ +99%" | awk '{print $2}'; }
nginx_out=$(run "http://127.0.0.1:$nginx_port/")
memory_out=$(run -s bench/check.lua "http://127.0.0.1:$memory_port")
redis_out=$(run -s bench/check.lua "http://127.0.0.1:$redis_api_port")

printf '%-52s %12s %10s\n' "wrk -t2 -c64, ${seconds}s" "requests/s" "p99"
printf '%-52s %12s %10s\n' "nginx limit_req (answers itself)" "$(echo "$nginx_out" | rps)" "$(echo "$nginx_out" | p99)"
printf '%-52s %12s %10s\n' "spillway POST /v1/check, seed policy, memory" "$(echo "$memory_out" | rps)" "$(echo "$memory_out" | p99)"
printf '%-52s %12s %10s\n' "spillway POST /v1/check, seed policy, Redis" "$(echo "$redis_out" | rps)" "$(echo "$redis_out" | p99)"
python3 - "$(echo "$nginx_out" | rps)" "$(echo "$memory_out" | rps)" "$(echo "$redis_out" | rps)" <<'PY'
import sys
nginx, memory, redis = map(float, sys.argv[1:])
print(f"ratios: spillway memory / nginx limit_req = {memory / nginx:.2f}, "
      f"spillway Redis / nginx limit_req = {redis / nginx:.2f}")
PY
