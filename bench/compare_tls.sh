#!/usr/bin/env bash
# TLS vs plain TCP to one Redis on the same machine, side by side in one run: spillway bench
# (gcra 100/s per key, 10,000 keys, 50 in flight, batched) against a plain port and a TLS port
# of two otherwise identical redis-server processes, alternating, ROUNDS rounds of SECONDS each.
# For each: checks/s and the client's CPU per check (user + system time of the spillway bench
# process from getrusage, divided by its checks). Certificates: a throwaway CA and a server
# certificate for 127.0.0.1, made here with openssl.
# Usage: bench/compare_tls.sh [SECONDS] [ROUNDS]   (see docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
rounds=${2:-3}
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target spillway_cli >/dev/null
bin=build/release/src/spillway

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
  -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > "$work/san"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
  -CAcreateserial -days 2 -extfile "$work/san" -out "$work/server.pem" 2>/dev/null

plain=$(free_port)
tls=$(free_port)
redis-server --port "$plain" --bind 127.0.0.1 --save "" --appendonly no --logfile "$work/plain.log" &
pids+=($!)
redis-server --port 0 --tls-port "$tls" --bind 127.0.0.1 --save "" --appendonly no \
  --tls-cert-file "$work/server.pem" --tls-key-file "$work/server.key" \
  --tls-ca-cert-file "$work/ca.pem" --tls-auth-clients no --logfile "$work/tls.log" &
pids+=($!)
until redis-cli -p "$plain" ping >/dev/null 2>&1; do sleep 0.05; done
until redis-cli --tls --cacert "$work/ca.pem" -p "$tls" ping >/dev/null 2>&1; do sleep 0.05; done

# Runs spillway bench, prints "checks cpu_seconds".
run_bench() {
  python3 - "$bin" "$1" "$seconds" <<'PY'
import resource, subprocess, sys
bin, url, seconds = sys.argv[1:4]
out = subprocess.run([bin, "bench", "--backend", url, "--algorithm", "gcra", "--limit", "100",
                      "--period", "1s", "--concurrency", "50", "--keys", "10000",
                      "--duration", seconds + "s"], check=True, capture_output=True, text=True).stdout
fields = dict(line.split("=", 1) for line in out.split() if "=" in line)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
errors = int(fields["errors"])
if errors:
    sys.exit(f"{url}: {errors} errors")
print(int(fields["admitted"]) + int(fields["denied"]), usage.ru_utime + usage.ru_stime)
PY
}

printf '%-6s %-5s %10s %16s\n' round mode checks/s cpu_us/check
declare -A total_checks total_cpu
for round in $(seq 1 "$rounds"); do
  for mode in plain tls; do
    if [ "$mode" = plain ]; then url="redis://127.0.0.1:$plain"
    else url="rediss://127.0.0.1:$tls?tls_ca_file=$work/ca.pem"; fi
    read -r checks cpu < <(run_bench "$url")
    total_checks[$mode]=$(( ${total_checks[$mode]:-0} + checks ))
    total_cpu[$mode]=$(python3 -c "print(${total_cpu[$mode]:-0} + $cpu)")
    python3 -c "print(f'{$round:<6} {\"$mode\":<5} {$checks/$seconds:10.0f} {$cpu*1e6/$checks:16.2f}')"
  done
done
python3 - "${total_checks[plain]}" "${total_cpu[plain]}" "${total_checks[tls]}" "${total_cpu[tls]}" <<'PY'
import sys
pc, pu, tc, tu = map(float, sys.argv[1:])
print(f"all rounds: tls/plain checks/s = {tc/pc:.2f}, tls/plain client CPU per check = "
      f"{(tu/tc)/(pu/pc):.2f}")
PY
