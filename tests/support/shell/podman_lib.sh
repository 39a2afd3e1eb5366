# Shell functions shared by the tests that run spillway's image with podman
# (tests/container/container_test.sh, tests/readme/quick_start_test.sh). Sourced, not run.
# The sourcing script sets `test_name` (its messages' prefix), `work` (its scratch directory)
# and `started` ($SECONDS at its start) before calling them. The functions call `command podman`,
# so that a test may stand in for `podman` with a shell function of its own.

# The test's one argument, a built spillway: sets `binary` (absolute) and `source_dir` (the
# repository), and fails unless every TOOL is on the PATH.
take_binary_and_tools() {  # "$@" of the test, then -- TOOL...
  local args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  [ ${#args[@]} -eq 1 ] || fail "usage: $0 BINARY"
  binary=$(readlink -f "${args[0]}")
  [ -x "$binary" ] || fail "${args[0]} is not an executable"
  source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || fail "$tool is missing (scripts/setup.sh installs it)"
  done
}

fail() {
  echo "$test_name: FAIL: $*" >&2
  exit 1
}
step() { echo "== $test_name: $* ($((SECONDS - started)) s)"; }

# podman's own configuration for this test only, in $work/containers.conf. On these test
# machines (a container with a hybrid cgroup v1/v2 hierarchy, no systemd as PID 1, and lower hard
# limits than podman assumes):
# - runtime "runc": crun, podman's default, cannot set up a container's cgroups on a hybrid
#   hierarchy and fails every start; runc handles it;
# - cgroup_manager "cgroupfs": the "systemd" manager needs a running systemd to ask;
# - default_ulimits: podman raises a container's nofile/nproc limits to values above this
#   machine's hard limits, which the kernel refuses (an unprivileged process cannot exceed them);
#   1024 is below every limit seen and plenty for spillway.
# A user's ordinary podman or docker needs none of this (docs/deploy.md, "Container image").
use_test_containers_conf() {
  cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
EOF
  export CONTAINERS_CONF="$work/containers.conf"
}

free_ports() {  # N: N distinct free TCP ports on 127.0.0.1 (bound by the kernel, then closed)
  node -e '
    const net = require("net");
    const servers = Array.from({length: Number(process.argv[1])}, () => net.createServer());
    Promise.all(servers.map((s) => new Promise((r) => s.listen(0, "127.0.0.1", r)))).then(() => {
      console.log(servers.map((s) => s.address().port).join(" "));
      servers.forEach((s) => s.close());
    });' "$1"
}

# Starts redis-server on 127.0.0.1:PORT (no persistence), its log in $work/redis.log; sets
# redis_pid; fails unless it answers PING within 10 s.
start_redis() {  # PORT
  redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 100); do
    redis-cli -p "$1" ping 2>/dev/null | grep -q PONG && return 0
    kill -0 "$redis_pid" 2>/dev/null || { cat "$work/redis.log" >&2; fail "redis-server exited"; }
    sleep 0.1
  done
  fail "redis-server on port $1 does not answer"
}

# Waits up to 30 s for CONTAINER's log to match PATTERN; prints the matching line.
wait_for_log() {
  local container=$1 pattern=$2 line
  for _ in $(seq 300); do
    # (The whole log first: grep leaving early would break podman's pipe, failing the pipeline.)
    line=$(grep -m1 -E "$pattern" <<<"$(command podman logs "$container" 2>&1)") &&
      { echo "$line"; return 0; }
    sleep 0.1
  done
  command podman logs "$container" >&2 || true
  fail "$container did not log /$pattern/ within 30 s"
}

# Stops CONTAINER with command podman stop (the image's stop signal, SIGKILL only after 30 s) and
# fails unless it exited with status 0.
stop_cleanly() {
  local container=$1 t0 code
  t0=$(date +%s%N)
  # (command podman logs an error about healthcheck timers when there is no systemd: a liveness probe
  # becomes a healthcheck that only systemd would run; this test calls the probes' paths itself.)
  command podman stop --time 30 "$container" >/dev/null 2>"$work/stop.log" ||
    { cat "$work/stop.log" >&2; fail "podman stop $container failed"; }
  code=$(command podman inspect --format '{{.State.ExitCode}}' "$container")
  echo "$container: stopped in $((($(date +%s%N) - t0) / 1000000)) ms, exit status $code"
  [ "$code" = 0 ] || { command podman logs "$container" >&2; fail "$container exited with $code"; }
  grep -q 'SIGTERM: draining and stopping' <<<"$(command podman logs "$container" 2>&1)" ||
    fail "$container logged no SIGTERM drain"
}

# HTTP GET/POST on loopback; prints "CODE BODY".
http() {  # METHOD URL [BODY]
  local answer
  if [ "$1" = POST ]; then
    answer=$(command curl -sS --max-time 10 -w '\n%{http_code}' -XPOST "$2" \
      -H 'Content-Type: application/json' -d "$3") || fail "$1 $2: curl failed"
  else
    answer=$(command curl -sS --max-time 10 -w '\n%{http_code}' "$2") || fail "$1 $2: curl failed"
  fi
  echo "${answer##*$'\n'} ${answer%$'\n'*}"
}
expect_http() {  # METHOD URL BODY_OR_EMPTY CODE BODY_PREFIX
  local got
  got=$(http "$1" "$2" "$3")
  echo "$1 $2: $got"
  [[ "$got" == "$4 $5"* ]] || fail "$1 $2 answered '$got', not '$4 $5…'"
}
