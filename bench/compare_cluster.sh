#!/usr/bin/env bash
# One Redis vs a 3-primary Redis Cluster on the same machine, side by side in one run:
#   single checks   spillway bench, gcra 100/s per key, 10,000 keys, 50 in flight, batched
#                   (default) and one check per script call (--batch 1);
#   layered         spillway serve with the seed policy (three layers on three hash slots: on the
#                   cluster, reserve then refund), wrk -t2 -c64 POST /v1/check (bench/check.lua).
# For each: checks (requests)/s, p50/p99, and the Redis CPU per check (request): the user +
# system time of the Redis processes (summed over the nodes, from /proc/PID/stat) divided by the
# count. (INFO commandstats' usec would count the time a node waits for a core too: four Redis
# processes and the client share 2 cores here.)
# Usage: bench/compare_cluster.sh [SECONDS]   (see docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null
bin=build/release/src/spillway

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# A port whose cluster bus port (+10000) is free too.
cluster_port() {
  python3 - <<'PY'
import random, socket
while True:
    p = random.randint(20000, 45000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass
PY
}
start_redis() {  # port extra-args...
  local port=$1; shift
  mkdir -p "$work/$port"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work/$port" \
    --logfile "$work/$port/log" "$@" & pids+=($!)
  until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
}

single=$(free_port)
start_redis "$single"
cluster_ports=()
for _ in 1 2 3; do
  p=$(cluster_port)
  start_redis "$p" --cluster-enabled yes --cluster-config-file nodes.conf
  cluster_ports+=("$p")
done
redis-cli --cluster create $(printf '127.0.0.1:%s ' "${cluster_ports[@]}") --cluster-yes >/dev/null
until [ "$(redis-cli -p "${cluster_ports[0]}" cluster info | grep -c cluster_state:ok)" = 1 ]; do
  sleep 0.1
done
cluster_url="redis+cluster://$(printf '127.0.0.1:%s,' "${cluster_ports[@]}" | sed 's/,$//')"

hz=$(getconf CLK_TCK)
# CPU time (µs, user + system) the Redis processes of the given ports have used so far.
cpu_usec() {
  for p in "$@"; do
    pid=$(redis-cli -p "$p" info server | awk -F: '/^process_id:/ { print $2 }' | tr -d '\r')
    awk '{ print $14 + $15 }' "/proc/$pid/stat"
  done | awk -v hz="$hz" '{ sum += $1 } END { print sum * 1000000 / hz }'
}
field() { grep "^$1=" | cut -d= -f2; }

results="$work/results"
: > "$results"
bench_checks() {  # name url nodes... ; args via BENCH_ARGS
  local name=$1 url=$2 out checks usec before
  shift 2
  before=$(cpu_usec "$@")
  out=$("$bin" bench --backend "$url" --algorithm gcra --limit 100 --period 1s --concurrency 50 \
          --keys 10000 --duration "${seconds}s" $BENCH_ARGS)
  usec=$(python3 -c "print($(cpu_usec "$@") - $before)")
  checks=$(( $(echo "$out" | field admitted) + $(echo "$out" | field denied) ))
  echo "$name $(echo "$out" | field checks_per_second) $(echo "$out" | field p50_us) \
$(echo "$out" | field p99_us) $(python3 -c "print(f'{$usec / max(1, $checks):.2f}')")" >> "$results"
}
BENCH_ARGS="" bench_checks "one Redis, batched" "redis://127.0.0.1:$single" "$single"
BENCH_ARGS="" bench_checks "cluster, batched" "$cluster_url" "${cluster_ports[@]}"
BENCH_ARGS="--batch 1" bench_checks "one Redis, one check per call" "redis://127.0.0.1:$single" "$single"
BENCH_ARGS="--batch 1" bench_checks "cluster, one check per call" "$cluster_url" "${cluster_ports[@]}"

serve_layered() {  # name url nodes...
  local name=$1 url=$2 port pid out rps p99 usec before
  shift 2
  port=$(free_port)
  cat > "$work/$name.yaml" <<CONF
server: {listen: "127.0.0.1:$port", threads: 2, access_log: off}
backend: {url: "$url", timeout: 1s}
CONF
  cat bench/seed_layers.yaml >> "$work/$name.yaml"
  "$bin" serve --config "$work/$name.yaml" 2>"$work/$name.log" & pid=$!
  until (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.05; done
  before=$(cpu_usec "$@")
  out=$(wrk -t2 -c64 -d"${seconds}s" --latency -s bench/check.lua "http://127.0.0.1:$port/v1/check")
  usec=$(python3 -c "print($(cpu_usec "$@") - $before)")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rps=$(echo "$out" | awk '/Requests\/sec/ { print $2 }')
  p99=$(echo "$out" | awk '$1 == "99%" { print $2 }')
  echo "$name $rps - $p99 $(python3 -c "print(f'{$usec / max(1.0, $rps * $seconds):.2f}')")" >> "$results"
}
serve_layered layered-one "redis://127.0.0.1:$single" "$single"
serve_layered layered-cluster "$cluster_url" "${cluster_ports[@]}"

python3 - "$results" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    name, rate, p50, p99, cpu = line.rsplit(" ", 4)
    rows[name] = (float(rate), p50, p99.strip(), float(cpu))
print(f"{'what':34s} {'per second':>12s} {'p50 µs':>9s} {'p99':>9s} {'Redis CPU µs / check':>22s}")
for name, (rate, p50, p99, cpu) in rows.items():
    print(f"{name:34s} {rate:12.0f} {p50:>9s} {p99:>9s} {cpu:22.2f}")
def ratio(a, b, i):
    return rows[a][i] / rows[b][i]
print("cluster / one Redis: "
      f"batched checks/s {ratio('cluster, batched', 'one Redis, batched', 0):.2f}, "
      f"Redis CPU per check {ratio('cluster, batched', 'one Redis, batched', 3):.2f}; "
      f"one check per call: checks/s {ratio('cluster, one check per call', 'one Redis, one check per call', 0):.2f}, "
      f"CPU {ratio('cluster, one check per call', 'one Redis, one check per call', 3):.2f}; "
      f"three layers: requests/s {ratio('layered-cluster', 'layered-one', 0):.2f}, "
      f"Redis CPU per request {ratio('layered-cluster', 'layered-one', 3):.2f}")
PY
