# Sourced by the HTTP benchmarks (bench/compare_http.sh, bench/latency.sh) and the Redis ones that
# need only a server (bench/compare_reservations.sh, bench/compare_concurrency.sh): a scratch folder,
# free loopback ports, the processes to stop on exit, and nginx's limit_req as the yardstick
# (two workers, 1000r/m per client address, burst 1000, 429 past it; answers "ok" itself).
# After sourcing: $work, free_port, wait_port, the pids array, start_nginx, which sets
# $nginx_port, and start_redis, which sets $redis_port.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
wait_port() { for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }

start_nginx() {
  nginx_port=$(free_port)
  cat > "$work/nginx.conf" <<CONF
daemon off; worker_processes 2; pid $work/nginx.pid; error_log $work/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work;
  uwsgi_temp_path $work; scgi_temp_path $work;
  limit_req_zone \$binary_remote_addr zone=edge:10m rate=1000r/m;
  server {
    listen 127.0.0.1:$nginx_port;
    # limit_req runs in the preaccess phase, after the rewrite phase where return answers: a
    # return here would answer before the limit is ever applied. try_files comes after it.
    location / {
      limit_req zone=edge burst=1000 nodelay; limit_req_status 429; try_files /nonexistent @ok;
    }
    location @ok { return 200 "ok\n"; }
  }
}
CONF
  /usr/sbin/nginx -c "$work/nginx.conf" -p "$work" &
  pids+=($!)
  wait_port "$nginx_port"
}

# A redis-server on a free loopback port, nothing saved, stopped on exit; waits for its PING.
start_redis() {
  redis_port=$(free_port)
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    --logfile "$work/redis.log" &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "redis-server did not start: $(cat "$work/redis.log")" >&2
  return 1
}

# µs of Redis CPU spent in script calls (EVALSHA and EVAL, from INFO commandstats) on the
# redis-server at port $1 since its stats were last reset (CONFIG RESETSTAT). Used by
# bench/compare_reservations.sh and bench/compare_concurrency.sh.
script_usec() {
  redis-cli -p "$1" info commandstats |
    awk -F'[=,:]' '/^cmdstat_(evalsha|eval):/ { for (i = 1; i < NF; i++) if ($i == "usec") s += $(i + 1) }
                   END { print s + 0 }'
}

# CPU ticks (user + system) a process has used, and what a wrk run measured: requests/s, p50, p99
# and the server's CPU per request in µs (from the ticks before and after), on one line for
# printf. Used by bench/shaping_auth.sh and bench/shedding_auth.sh.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
wrk_figures() {  # wrk_output ticks_before ticks_after
  local requests
  requests=$(awk '/requests in/ {print $1}' "$1")
  printf '%s %s %s %s\n' "$(awk '/Requests\/sec/ {print $2}' "$1")" \
    "$(awk '$1 == "50%" {print $2}' "$1")" "$(awk '$1 == "99%" {print $2}' "$1")" \
    "$(awk -v t=$(($3 - $2)) -v c="$(getconf CLK_TCK)" -v n="$requests" \
      'BEGIN {print t / c / n * 1e6}')"
}
