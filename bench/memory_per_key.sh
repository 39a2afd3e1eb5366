#!/usr/bin/env bash
# Memory per tracked key, in one run:
#   in-process: peak RSS of `spillway replay` (memory store, gcra 100 per hour) over KEYS distinct
#               12-byte keys, minus the same run over one key; divided by KEYS;
#   Redis:      used_memory grown by 100,000 keys that spillway's GCRA script wrote (called by
#               EVALSHA exactly as the Redis store sends it, keys named as it names them), next to
#               100,000 plain `SET <12-byte key> <16 bytes> PX 3600000` on the same redis-server.
# Usage: bench/memory_per_key.sh [KEYS]   (default 1000000; see docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${1:-1000000}
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli print_script >/dev/null
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --daemonize yes --pidfile "$work/redis.pid" --logfile "$work/redis.log"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done

python3 - "$work" "$keys" <<'PY'
import sys
work, n = sys.argv[1], int(sys.argv[2])
with open(f"{work}/distinct.csv", "w") as f:
    f.writelines(f"{1000000 + i},user:{i:07d}\n" for i in range(n))
with open(f"{work}/one.csv", "w") as f:
    f.writelines(f"{1000000 + i},user:0000000\n" for i in range(n))
PY
rss() { /usr/bin/time -f %M build/release/src/spillway replay --algorithm gcra --limit 100 \
          --period 1h "$1" 2>&1 >/dev/null | tail -1; }
one=$(rss "$work/one.csv")
many=$(rss "$work/distinct.csv")
echo "in-process memory store, gcra, 12-byte keys: $(( (many - one) * 1024 / keys )) B per key" \
     "(peak RSS $many KiB for $keys keys, $one KiB for one)"

used() { redis-cli -p "$port" info memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)/\1/p'; }
# The keys spillway's Redis store names (default prefix), written by its GCRA script as sent.
sha=$(build/release/bench/print_script gcra | redis-cli -p "$port" -x SCRIPT LOAD)
# The key name forms (src/redis/storage_key.h): digested (backend.key_hash sha256, the default),
# digested under a 2-byte key_prefix ("sw", so that the name fits jemalloc's 32-byte class), and
# readable (key_hash: none), each on an empty server.
python3 - "$sha" "$work" <<'PY'
import base64, hashlib, sys
sha, work = sys.argv[1], sys.argv[2]
def resp(*args):
    out = f"*{len(args)}\r\n"
    for a in args:
        out += f"${len(a.encode())}\r\n{a}\r\n"
    return out
def digested(user, prefix="spillway"):
    d = hashlib.sha256(f"gcra:100:3600000000:100:{user}".encode()).digest()[:16]
    return prefix + ":{" + base64.urlsafe_b64encode(d).decode().rstrip("=") + "}"
def digested_short_prefix(user):
    return digested(user, "sw")
def readable(user):
    return f"spillway:gcra:100:3600000000:100:{{{user}}}"
for name, form in (("digested", digested), ("digested-sw", digested_short_prefix),
                   ("readable", readable)):
    with open(f"{work}/calls-{name}.txt", "w") as f:
        for i in range(100000):
            f.write(resp("EVALSHA", sha, "1", form(f"user:{i:07d}"),
                         "", "0", "100", "3600000000", "100", "1", "36000000", "0", "0", "1"))
    with open(f"{work}/sample-{name}.txt", "w") as f:
        f.write(form("user:0000000"))
PY
per_key=()
for form in digested digested-sw readable; do
  redis-cli -p "$port" flushall >/dev/null
  sleep 0.2
  before=$(used)
  redis-cli -p "$port" --pipe < "$work/calls-$form.txt" >/dev/null
  after=$(used)
  per_key+=("$(( (after - before) / 100000 ))")
done
redis-cli -p "$port" flushall >/dev/null
sleep 0.2
before=$(used)
cat > "$work/plain.lua" <<'LUA'
for i = 1, 100000 do
  redis.call('SET', string.format('user:%07d', i), '0123456789abcdef', 'PX', 3600000)
end
LUA
redis-cli -p "$port" --eval "$work/plain.lua" >/dev/null
after=$(used)
plain=$(( (after - before) / 100000 ))
echo "redis, spillway gcra script, digested names: ${per_key[0]} B per key (e.g. $(cat "$work/sample-digested.txt"))"
echo "redis, spillway gcra script, digested names, key_prefix sw: ${per_key[1]} B per key (e.g. $(cat "$work/sample-digested-sw.txt"))"
echo "redis, spillway gcra script, readable names: ${per_key[2]} B per key (e.g. $(cat "$work/sample-readable.txt"))"
echo "redis, plain SET 12-byte key, 16-byte value, PX: $plain B per key"
python3 -c "print(f'ratio to plain SET: digested {${per_key[0]} / $plain:.2f}, digested with key_prefix sw {${per_key[1]} / $plain:.2f}, readable {${per_key[2]} / $plain:.2f}')"
