#!/usr/bin/env bash
# Tenant records on Redis, in one run (docs/benchmarks.md §11):
#   propagation: 20 plan changes through instance A's admin API; for each, the time from A's
#                200 until instance B's /v1/check answers with the new plan (B polls every 100 ms);
#   bulk import: RECORDS records (NDJSON, half free, half pro) through `spillway tenants import`
#                to A, timed; then until B's copy holds them all (its spillway_tenants gauge);
#   memory:      each instance's RSS after the import, and Redis' used_memory.
# Usage: bench/tenants_import.sh [RECORDS]   (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-1000000}
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null
bin=build/release/src/spillway
source bench/http_common.sh
start_redis
port=$redis_port
echo "bench 0123456789abcdef0123" > "$work/tokens"
declare -A listen admin
for i in a b; do
  listen[$i]=$(free_port); admin[$i]=$(free_port)
  cat > "$work/$i.yaml" <<YAML
server:
  listen: 127.0.0.1:${listen[$i]}
  admin_listen: 127.0.0.1:${admin[$i]}
  admin_token_file: $work/tokens
  access_log: false
backend:
  url: redis://127.0.0.1:$port
layers:
  - name: gateway
    key: [api_key]
    by_plan:
      source: store
      plans: {free: 60/min, pro: 600/min}
      default: free
YAML
  "$bin" serve --config "$work/$i.yaml" 2>"$work/$i.log" &
  pids+=($!)
done
for i in a b; do
  until curl -sf "127.0.0.1:${listen[$i]}/healthz" >/dev/null; do sleep 0.05; done
done

python3 - "${admin[a]}" "${listen[b]}" <<'PY'
import json, sys, time, urllib.request
admin, decide = sys.argv[1], sys.argv[2]
delays = []
for i in range(20):
    plan = "pro" if i % 2 == 0 else "free"
    req = urllib.request.Request(f"http://127.0.0.1:{admin}/v1/tenants/prop-key",
                                 data=json.dumps({"plan": plan}).encode(), method="PUT",
                                 headers={"Authorization": "Bearer 0123456789abcdef0123"})
    urllib.request.urlopen(req).read()
    start = time.monotonic()
    while True:
        body = urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{decide}/v1/check", data=b'{"api_key":"prop-key","cost":0}',
            method="POST")).read()
        if json.loads(body)["layers"][0]["plan"] == plan:
            break
        time.sleep(0.002)
    delays.append(time.monotonic() - start)
delays.sort()
print(f"propagation A -> B over 20 changes: min {delays[0]*1000:.0f} ms, "
      f"median {delays[10]*1000:.0f} ms, max {delays[-1]*1000:.0f} ms")
PY

python3 - "$work" "$records" <<'PY'
import sys
work, n = sys.argv[1], int(sys.argv[2])
with open(f"{work}/records.ndjson", "w") as f:
    for i in range(n):
        f.write('{"key":"sk-live-%08d","plan":"%s"}\n' % (i, "pro" if i % 2 else "free"))
PY
start=$(date +%s.%N)
"$bin" tenants import "$work/records.ndjson" --admin "http://127.0.0.1:${admin[a]}" \
  --token-file "$work/tokens" >/dev/null
imported=$(date +%s.%N)
want=$((records + 1))
until [ "$(curl -s "127.0.0.1:${listen[b]}/metrics" | sed -n 's/^spillway_tenants \([0-9]*\)/\1/p')" = "$want" ]; do
  sleep 0.05
done
followed=$(date +%s.%N)
python3 -c "import sys; s,i,f=map(float,sys.argv[1:]); print(f'import of $records records: {i-s:.2f} s ({$records/(i-s):,.0f} records/s); B holds them all {f-i:.2f} s later')" "$start" "$imported" "$followed"
for i in a b; do
  echo "instance $i RSS: $(( $(sed -n 's/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p' /proc/${pids[$([ $i = a ] && echo 0 || echo 1)]}/status) / 1024 )) MiB"
done
echo "redis used_memory: $(redis-cli -p "$port" info memory | tr -d '\r' | sed -n 's/^used_memory_human://p')"
