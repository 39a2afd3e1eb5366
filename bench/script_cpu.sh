#!/usr/bin/env bash
# Redis CPU per check of spillway's scripts, side by side in one run: INFO commandstats
# usec_per_call of EVALSHA while redis-benchmark (-c 50 -P 16) calls each script, round after
# round (the machine is shared: each round runs every script once, the table gives medians).
#   article        bench/article_gcra.lua: the source article's GCRA (inexact; the reference)
#   <algorithm>    spillway's script for it, one check per call, the server's TIME
#   gcra x8        spillway's GCRA script, 8 checks per call, each with its eight arguments
#   gcra x8 shared the same 8 checks as batching sends checks of one limit: the first with its
#                  eight arguments, each next one with its cost alone (-1 - cost): per check
#   NAME=FILE      any other script taking the current GCRA script's eight arguments per check,
#                  one check per call and 8 (a version from before shaping took six, before
#                  priorities seven: it would read these as other arguments)
# 10,000 keys, 100 per second per key (so most checks are admitted and write).
# Usage: bench/script_cpu.sh [ROUNDS] [NAME=FILE ...]   (see docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
shift || true
requests=${REQUESTS:-300000}

cmake --preset release >/dev/null
cmake --build --preset release --target print_script spillway_cli >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
workdir=$(mktemp -d)
# Redis on one core and the load on the other, when taskset is there (less noise).
pin_redis=() pin_load=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  pin_redis=(taskset -c 0) pin_load=(taskset -c 1)
fi
"${pin_redis[@]}" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$workdir" --daemonize yes --pidfile "$workdir/redis.pid" --logfile "$workdir/redis.log"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$workdir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done

# name|file|checks per call|arguments after the sha
limit_args="100 1000000 100 1 10000 0 0 1"  # limit period burst limit_units period_units max_delay reserved cost
runs=("article|bench/article_gcra.lua|1|1 k:{__rand_int__} 10000 1000000 1700000000000000")
for a in gcra token_bucket fixed_window sliding_window sliding_log; do
  build/release/bench/print_script "$a" > "$workdir/$a.lua"
  runs+=("$a|$workdir/$a.lua|1|1 $a:{__rand_int__} '' 0 $limit_args")
done
batch_keys="" batch_numbers="" shared_numbers=" $limit_args"
for i in 1 2 3 4 5 6 7 8; do
  batch_keys+=" b$i:{__rand_int__}"
  batch_numbers+=" $limit_args"
  if [ "$i" -gt 1 ]; then shared_numbers+=" -2"; fi  # cost 1
done
runs+=("gcra x8|$workdir/gcra.lua|8|8$batch_keys '' 0$batch_numbers")
runs+=("gcra x8 shared|$workdir/gcra.lua|8|8$batch_keys '' 0$shared_numbers")
for extra in "$@"; do
  runs+=("${extra%%=*}|${extra#*=}|1|1 x:{__rand_int__} '' 0 $limit_args")
  runs+=("${extra%%=*} x8|${extra#*=}|8|8$batch_keys '' 0$batch_numbers")
done

# Through the client: spillway bench sends GCRA checks one per call (--batch 1), 50 in flight,
# with its real keys and arguments, to the same Redis ("client" in the file column).
runs+=("gcra via client|client|1|")

measure() {  # file, checks per call, args -> µs of Redis CPU per check
  local sha=""
  # The client loads its script itself (EVALSHA, then EVAL on NOSCRIPT, as it does in service).
  if [ "$1" = client ]; then redis-cli -p "$port" script flush >/dev/null
  else sha=$(redis-cli -p "$port" -x SCRIPT LOAD < "$1"); fi
  redis-cli -p "$port" flushall >/dev/null
  redis-cli -p "$port" config resetstat >/dev/null
  if [ "$1" = client ]; then
    "${pin_load[@]}" build/release/src/spillway bench --backend "redis://127.0.0.1:$port" \
      --batch 1 --concurrency 50 --keys 10000 --limit 100 --requests "$requests" >/dev/null
  else
    eval "${pin_load[*]} redis-benchmark -p $port -c 50 -P 16 -r 10000 -n $requests -q EVALSHA $sha $3" \
      >/dev/null
  fi
  redis-cli -p "$port" info commandstats | tr -d '\r' |
    sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p' |
    awk -v n="$2" '{ printf "%.3f\n", $1 / n }'
}

results=$(mktemp)
for ((r = 1; r <= rounds; r++)); do
  for run in "${runs[@]}"; do
    IFS='|' read -r name file per_call args <<<"$run"
    echo "$name|$(measure "$file" "$per_call" "$args")" >>"$results"
  done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, value = line.rstrip("\n").split("|")
    rows.setdefault(name, []).append(float(value))
article = statistics.median(rows["article"])
print(f"{'script (Redis µs per check, median of rounds)':<48} {'µs':>7} {'/ article':>10}  rounds")
for name, values in rows.items():
    m = statistics.median(values)
    print(f"{name:<48} {m:7.2f} {m / article:9.2f}x  " + " ".join(f"{v:.2f}" for v in values))
PY
rm -f "$results"
