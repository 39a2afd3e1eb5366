#!/usr/bin/env bash
# A counter reset reaching another instance (docs/benchmarks.md §16, issue 32): two `spillway
# serve` on one redis-server, both with backend.over_limit_cache; A has the admin API, B has not.
# Per trial: a fresh key exhausted (2/hour) through A, denied 3 times by B (its cache warm, a
# denial of about 30 min remembered), reset through A's admin API, then the time from A's 200
# until B admits it (B asked every 2 ms). Prints min, median and max over TRIALS.
# Usage: bench/reset_reach.sh [TRIALS] [BINARY]   (default 50, the release build's binary)
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-50}
bin=${2:-}
if [[ -z "$bin" ]]; then
  cmake --preset release >/dev/null
  cmake --build --preset release --target spillway_cli >/dev/null
  bin=build/release/src/spillway
fi
source bench/http_common.sh
start_redis
port=$redis_port
token=bench0123456789abcdef0123
echo "ops $token" > "$work/tokens"
a_port=$(free_port); a_admin=$(free_port); b_port=$(free_port)
layers='layers:
  - name: gateway
    key: [api_key]
    limit: 2/hour'
printf 'server:\n  listen: 127.0.0.1:%s\n  admin_listen: 127.0.0.1:%s\n  admin_token_file: %s\n  access_log: false\nbackend:\n  url: redis://127.0.0.1:%s\n  over_limit_cache: 10000\n%s\n' \
  "$a_port" "$a_admin" "$work/tokens" "$port" "$layers" > "$work/a.yaml"
printf 'server:\n  listen: 127.0.0.1:%s\n  access_log: false\nbackend:\n  url: redis://127.0.0.1:%s\n  over_limit_cache: 10000\n%s\n' \
  "$b_port" "$port" "$layers" > "$work/b.yaml"
"$bin" serve --config "$work/a.yaml" 2> "$work/a.log" & pids+=($!)
"$bin" serve --config "$work/b.yaml" 2> "$work/b.log" & pids+=($!)
wait_port "$a_admin" && wait_port "$b_port" || { cat "$work"/a.log "$work"/b.log >&2; exit 1; }
python3 - "$trials" "$a_port" "$a_admin" "$b_port" "$token" <<'PY'
import json, sys, time, urllib.error, urllib.request
trials, a, admin, b, token = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
def allowed(port, key):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/check",
                                     data=json.dumps({"api_key": key}).encode())
    try:
        return json.load(urllib.request.urlopen(request))["allowed"]
    except urllib.error.HTTPError as answer:  # 429
        return json.load(answer)["allowed"]
times = []
for trial in range(trials):
    key = f"reach-{trial}-{time.time_ns()}"
    while allowed(a, key):
        pass
    for _ in range(3):
        assert not allowed(b, key)
    reset = urllib.request.Request(f"http://127.0.0.1:{admin}/v1/tenants/{key}/counters/gateway",
                                   method="DELETE", headers={"Authorization": f"Bearer {token}"})
    urllib.request.urlopen(reset).read()
    start = time.monotonic()
    while not allowed(b, key):
        if time.monotonic() - start > 60:
            sys.exit(f"trial {trial}: B still denies 60 s after the reset")
        time.sleep(0.002)
    times.append(time.monotonic() - start)
times.sort()
print(f"{len(times)} resets: B admits after min {times[0]*1000:.0f} ms, "
      f"median {times[len(times)//2]*1000:.0f} ms, max {times[-1]*1000:.0f} ms")
PY
