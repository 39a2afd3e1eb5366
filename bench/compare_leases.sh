#!/usr/bin/env bash
# Quota leases against exact checks on one shared GCRA limit, side by side in one run, on a fresh
# redis-server on loopback (bench/lease_bench.cc: checks/s, and Redis calls per check).
# Usage: bench/compare_leases.sh [SECONDS_PER_RUN] [ROUNDS]   (see docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-3}
rounds=${2:-3}
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target lease_bench >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
work=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --logfile "$work/redis.log" &
redis_pid=$!
trap 'kill $redis_pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
for round in $(seq "$rounds"); do
  echo "== round $round of $rounds"
  build/release/bench/lease_bench "redis://127.0.0.1:$port" "$seconds"
done
