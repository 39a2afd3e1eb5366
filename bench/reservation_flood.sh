#!/usr/bin/env bash
# A full reservation store under a reserve flood (issue 32; docs/benchmarks.md, "Reservations at
# the cap"): `spillway serve` on the memory backend with server.max_reservations CAP, over HTTP on
# loopback, one request at a time per connection (keep-alive), from separate processes so that
# no client waits on another's interpreter:
#   1. normal    reserve latency while the store is far from its cap (one connection, 3,000)
#   2. checks    /v1/check latency on an idle server (one connection, 3,000)
#   3. flood     4 connections send reserves as fast as they are answered, below the cap (all
#                admitted), while a fifth connection's /v1/check latency is measured (3,000):
#                the yardstick, what any flood of requests costs the checks on 2 server threads
#   4. fill      the store to its cap (4 connections, pipelined; not timed)
#   5. at cap    the same flood, every reserve refused, and the fifth connection's checks
# Prints p50 / p99 in µs for each, and the answers (status, allowed) with their counts.
# Usage: [CHECKS=3000] bench/reservation_flood.sh [CAP] [SPILLWAY_BINARY]
#   CAP: server.max_reservations; without it the config leaves it out and the binary's default
#   (1,000,000) applies, so that a binary older than the field can be measured too. The binary
#   default: the release build if there is one, else the ci build. CHECKS: the checks measured
#   per step (fewer for a binary where each takes long).
set -euo pipefail
cd "$(dirname "$0")/.."
cap=${1:-1000000}
cap_line="  max_reservations: $cap"
[[ -n ${1:-} ]] || cap_line=""
binary=${2:-}
if [[ -z $binary ]]; then
  binary=build/release/src/spillway
  [[ -x $binary ]] || binary=build/ci/src/spillway
fi
source bench/http_common.sh
port=$(free_port)
cat > "$work/flood.yaml" <<YAML
server:
  listen: 127.0.0.1:$port
  threads: 2
  access_log: off
$cap_line
  reservation_ttl: 1h
layers:
  - name: tpm
    key: [api_key]
    algorithm: fixed_window
    cost: tokens
    limit: 1000000000/min
YAML
"$binary" serve --config "$work/flood.yaml" 2> "$work/serve.log" &
pids+=($!)
wait_port "$port" || { cat "$work/serve.log"; exit 1; }
echo "binary $binary, server.max_reservations $cap"

PORT=$port CAP=$cap CHECKS=${CHECKS:-3000} python3 - <<'PY'
import json, multiprocessing as mp, os, socket, time

PORT, CAP = int(os.environ["PORT"]), int(os.environ["CAP"])

def connect():
    s = socket.create_connection(("127.0.0.1", PORT))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, s.makefile("rb")

def request(body):
    b = json.dumps(body).encode()
    return (b"POST /v1/check HTTP/1.1\r\nHost: b\r\nContent-Length: %d\r\n\r\n" % len(b)) + b

def read_reply(f):
    status = int(f.readline().split()[1])
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, f.read(length)

def timed(body_of, n):
    s, f = connect()
    out, answers = [], {}
    for i in range(n):
        t = time.perf_counter()
        s.sendall(request(body_of(i)))
        status, body = read_reply(f)
        out.append((time.perf_counter() - t) * 1e6)
        allowed = json.loads(body).get("allowed")
        answers[(status, allowed)] = answers.get((status, allowed), 0) + 1
    s.close()
    return sorted(out), answers

def pct(xs, p):
    return xs[min(len(xs) - 1, int(len(xs) * p))]

def show(name, xs, answers):
    print(f"{name:34s} p50 {pct(xs, .5):8.0f} µs   p99 {pct(xs, .99):8.0f} µs   n {len(xs):6d}   "
          + ", ".join(f"{s} allowed={a}: {c}" for (s, a), c in sorted(answers.items(), key=str)))

def fill(share, who):
    s, f = connect()
    batch = 500
    left = share
    while left > 0:
        n = min(batch, left)
        s.sendall(b"".join(request({"api_key": f"fill-{who}-{i % 1000}", "tokens": 1,
                                     "reserve": True}) for i in range(n)))
        for _ in range(n):
            status, _ = read_reply(f)
            if status != 200:
                raise SystemExit(f"fill: a reserve below the cap answered {status}")
        left -= n

def flood(who, stop, results):
    s, f = connect()
    lat, answers = [], {}
    i = 0
    while not stop.is_set():
        t = time.perf_counter()
        s.sendall(request({"api_key": f"flood-{who}-{i % 1000}", "tokens": 1, "reserve": True}))
        status, body = read_reply(f)
        lat.append((time.perf_counter() - t) * 1e6)
        allowed = json.loads(body).get("allowed")
        answers[(status, allowed)] = answers.get((status, allowed), 0) + 1
        i += 1
    results.put((lat, answers))

def open_reservations():
    s, f = connect()
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: b\r\n\r\n")
    _, body = read_reply(f)
    s.close()
    for line in body.decode().splitlines():
        if line.startswith("spillway_reservations_open "):
            return int(line.split()[1])
    return 0

def flood_while_checking(label, step):
    stop, results = mp.Event(), mp.Queue()
    flooders = [mp.Process(target=flood, args=(w, stop, results)) for w in range(4)]
    for p in flooders: p.start()
    time.sleep(1)  # the flood is under way
    lat, answers = timed(lambda i: {"api_key": f"check-{i % 1000}", "tokens": 1}, N)
    stop.set()
    show(f"{step}. check, during the reserve flood", lat, answers)
    flood_lat, flood_answers = [], {}
    for _ in flooders:
        l, a = results.get()
        flood_lat += l
        for k, v in a.items(): flood_answers[k] = flood_answers.get(k, 0) + v
    for p in flooders: p.join()
    show(f"{step}. reserve {label} (4 conns)", sorted(flood_lat), flood_answers)

N = int(os.environ["CHECKS"])
lat, answers = timed(lambda i: {"api_key": f"normal-{i % 1000}", "tokens": 1, "reserve": True}, N)
show("1. reserve, store far from its cap", lat, answers)
lat, answers = timed(lambda i: {"api_key": f"check-{i % 1000}", "tokens": 1}, N)
show("2. check, idle server", lat, answers)
flood_while_checking("below the cap", 3)
t = time.time()
need = CAP - open_reservations()
if need < 0:
    raise SystemExit("the flood below the cap filled the store: take a larger CAP")
fillers = [mp.Process(target=fill, args=(need // 4 + (1 if w < need % 4 else 0), w))
           for w in range(4)]
for p in fillers: p.start()
for p in fillers: p.join()
print(f"4. filled to {open_reservations()} open reservations in {time.time() - t:.1f} s")
flood_while_checking("at the cap", 5)
PY
grep -c 'reserve was refused' "$work/serve.log" | xargs echo "serve's log lines about refused reserves (one a second at most):"
