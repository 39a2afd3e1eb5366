#!/usr/bin/env bash
# Latency under a fixed offered load, published: for each path, its most requests/s (closed loop:
# `spillway bench`, back to back), then an open loop at 50 % and 90 % of that (`spillway bench
# --rate`: requests sent on a schedule, each latency counted from its scheduled time, so a stall
# is charged for every request due behind it). nginx's `limit_req` (two workers, the same config
# as bench/compare_http.sh) runs at the same offered rates as each HTTP path: the yardstick.
#   http-memory   spillway serve, seed policy, in-memory store, access log on: POST /v1/check
#   http-redis    the same on a fresh redis-server on loopback
#   grpc-memory   Envoy's rate limit service (`--grpc-listen`), bench/rls_load (grpc++ callback
#                 client, at most 64 calls in flight), 1,000 descriptor values all admitted
#   grpc-redis    the same on the Redis
#   store-redis   the Redis store from the bench process (64 checks in flight, batched scripts)
# HTTP load: 64 keep-alive connections on 2 event loops, bench/check.lua's request stream. (The
# in-memory store in-process is not here: a check is ~70 ns, less than the two clock reads an
# open loop needs per check; memory_store_bench measures it.)
# Usage: bench/latency.sh [SECONDS_PER_RUN]   (default 5; prints one table; docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
if ! [[ $seconds =~ ^[1-9][0-9]{0,4}$ ]]; then
  echo "usage: bench/latency.sh [SECONDS_PER_RUN] (a whole number of seconds, 1 to 99999; got \"$seconds\")" >&2
  exit 2
fi
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli rls_load >/dev/null
spillway=build/release/src/spillway
rls_load=build/release/bench/rls_load

# $work, free_port, wait_port, pids, start_nginx (the limit_req yardstick).
source bench/http_common.sh
start_nginx

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --logfile "$work/redis.log" & pids+=($!)
wait_port "$redis_port"

serve() {  # name backend_url -> "http_port grpc_port"
  local port grpc_port
  port=$(free_port)
  grpc_port=$(free_port)
  cat > "$work/$1.yaml" <<CONF
server: {listen: "127.0.0.1:$port", threads: 2, grpc_listen: "127.0.0.1:$grpc_port"}
backend: {url: "$2"}
rls: {config: "$PWD/bench/rls_rules"}
CONF
  cat bench/seed_layers.yaml >> "$work/$1.yaml"
  "$spillway" serve --config "$work/$1.yaml" >/dev/null 2>&1 &
  pids+=($!)
  wait_port "$port"
  wait_port "$grpc_port"
  echo "$port $grpc_port"
}
read -r memory_port memory_grpc < <(serve memory memory)
read -r redis_api_port redis_grpc < <(serve redis "redis://127.0.0.1:$redis_port")

field() { sed -n "s/^$1=//p" <<<"$2"; }
# One run: prints "requests/s p50 p99 p99.9 max" (µs); the bench's own arguments follow.
run() {
  local out
  out=$("$spillway" bench --duration "${seconds}s" "$@" 2>&1) || { echo "$out" >&2; exit 1; }
  echo "$(field checks_per_second "$out") $(field p50_us "$out") $(field p99_us "$out")" \
    "$(field p999_us "$out") $(field max_us "$out")"
}
row() {  # path load args...
  local path=$1 load=$2 rps p50 p99 p999 worst
  shift 2
  read -r rps p50 p99 p999 worst < <(run "$@")
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$path" "$load" "$rps" "$p50" "$p99" "$p999" "$worst"
}

echo "| path | offered | answered/s | p50 µs | p99 µs | p99.9 µs | max µs |"
echo "|---|---|---|---|---|---|---|"
http_path() {  # name url
  local max
  read -r max _ < <(run --http "$2")
  printf '| %s | closed loop (max) | %s | | | | |\n' "$1" "$max"
  for share in 50 90; do
    local rate=$((max * share / 100))
    row "$1" "$share % = $rate/s" --http "$2" --rate "$rate"
    row "nginx limit_req" "$share % of $1 = $rate/s" --http "http://127.0.0.1:$nginx_port/" \
      --rate "$rate"
  done
}
http_path http-memory "http://127.0.0.1:$memory_port/v1/check"
http_path http-redis "http://127.0.0.1:$redis_api_port/v1/check"

# gRPC: rls_load prints one line of name=value fields.
grpc_run() {  # port [rate] -> "calls/s p50 p99 p99.9 max"
  local out
  out=$("$rls_load" "127.0.0.1:$1" bench open 1000 64 "$seconds" ${2:+"$2"}) ||
    { echo "$out" >&2; exit 1; }
  tr ' ' '\n' <<<"$out" | awk -F= '{ v[$1] = $2 } END {
    print v["calls_per_second"], v["p50_us"], v["p99_us"], v["p999_us"], v["max_us"] }'
}
grpc_path() {  # name port
  local max rps p50 p99 p999 worst
  read -r max _ < <(grpc_run "$2")
  printf '| %s | closed loop (max) | %s | | | | |\n' "$1" "$max"
  for share in 50 90; do
    local rate=$((max * share / 100))
    read -r rps p50 p99 p999 worst < <(grpc_run "$2" "$rate")
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$share % = $rate/s" "$rps" "$p50" \
      "$p99" "$p999" "$worst"
  done
}
grpc_path grpc-memory "$memory_grpc"
grpc_path grpc-redis "$redis_grpc"

store_path() {  # name backend extra-args...
  local name=$1 backend=$2 max
  shift 2
  read -r max _ < <(run --backend "$backend" "$@")
  printf '| %s | closed loop (max) | %s | | | | |\n' "$name" "$max"
  for share in 50 90; do
    local rate=$((max * share / 100))
    row "$name" "$share % = $rate/s" --backend "$backend" --rate "$rate" "$@"
  done
}
store_path store-redis "redis://127.0.0.1:$redis_port" --concurrency 64
