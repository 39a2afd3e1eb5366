#!/usr/bin/env bash
# The README's "Five minutes, step by step", run block by block as written (ctest
# readme.quick_start, registered in tests/CMakeLists.txt), so that the quick start cannot drift.
#
# Every fenced block of that section is read from README.md and sourced in order, in a scratch
# directory (my-limits.yaml is written there; deploy/ is linked to the repository's). The
# commands a user runs are shell functions here that keep the README's words but fit a shared
# test machine:
#   scripts/run.sh ARGS       -> this build's spillway serve ARGS, in the background, on a free
#                                loopback port instead of 8080 (a README's run.sh would build the
#                                release preset first: the ci preset compiles the same sources),
#                                127.0.0.1:6379 -> a redis-server this test started; a run stops
#                                the one before, as a user's Ctrl-C would;
#   build/release/src/spillway -> this build's binary;
#   curl                       -> curl with localhost:8080 -> the free port (its output is also
#                                kept for the checks below);
#   scripts/image.sh           -> scripts/image.sh --binary (this build) --tag (this run's);
#   podman run -p …:8080 IMAGE -> podman run on the host's network, listening on the free port;
#   kubectl apply -k DIR       -> no cluster here: checks that DIR's kustomization lists files
#                                that exist (container.manifests validates them against the
#                                Kubernetes API schemas), then runs its ConfigMap and Deployment
#                                with `podman kube play` as tests/kubernetes/play_manifest.mjs
#                                adapts them (the host's network, loopback, free ports, this
#                                run's image); the test takes it down at its end;
#   kubectl port-forward deployment/NAME 8080:8080
#                              -> checks NAME and the port against the Deployment (its pod is
#                                on the host's network already: nothing to forward).
# podman runs with tests/support/shell/podman_lib.sh's containers.conf (these machines' cgroups
# and limits). After each block, what its comments promise is checked (status codes, headers,
# Redis keys, metrics, probes). A README line whose command has no function here fails the test,
# as does a block the test has no checks for. Prints each step's time.
#
# Usage: tests/readme/quick_start_test.sh BINARY
#   BINARY: a built spillway (the ci preset's build/ci/src/spillway).
set -euo pipefail
test_name=quick_start_test
started=$SECONDS
source "$(dirname "$0")/../support/shell/podman_lib.sh"

take_binary_and_tools "$@" -- buildah podman runc curl redis-server redis-cli node

# --- The section's blocks, one file each, in a scratch directory removed at the end.
work=$(mktemp -d /tmp/spillway-quick-start.XXXXXX)
# --- What the run leaves behind, removed at the end.
tag="localhost/spillway-quick-start:$$"
name="spillway-quick-start-$$"
serve_pid=""
redis_pid=""
container=""
played=""
cleanup() {
  local rc=$?
  set +e
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  [ -n "$played" ] && command podman kube play --down "$played" >/dev/null 2>&1
  command podman volume rm -f "$name-kube-config" >/dev/null 2>&1
  command podman rm -f -t 0 "$name" >/dev/null 2>&1
  command podman rmi -f "$tag" >/dev/null 2>&1
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

awk -v dir="$work" '
  /^### Five minutes, step by step/ { inside = 1; next }
  inside && /^## / { exit }
  inside && /^```/ { if (open) { open = 0 } else { open = 1; n++ }; next }
  inside && open { print > (dir "/block-" n ".sh") }
' "$source_dir/README.md"
blocks=$(find "$work" -name 'block-*.sh' | wc -l)
[ "$blocks" -eq 6 ] ||
  fail "the quick start has $blocks code blocks; this test checks 6 (update its checks below)"

# Each line's command must be one this test stands in for (a heredoc's body is data).
for file in "$work"/block-*.sh; do
  awk '
    heredoc { if ($0 == heredoc) heredoc = ""; next }
    /^[[:space:]]*(#|$)/ { next }
    { print $1 }
    match($0, /<<.?EOF/) { heredoc = "EOF" }
  ' "$file" | while read -r command; do
    case "$command" in
      scripts/run.sh | scripts/image.sh | build/release/src/spillway | curl | cat | podman | kubectl) ;;
      *) fail "README quick start runs '$command', which this test does not stand in for" ;;
    esac
  done
done

# The README's run.sh passes its arguments to spillway serve (the stand-in below does).
grep -qxF 'exec build/release/src/spillway serve "$@"' "$source_dir/scripts/run.sh" ||
  fail "scripts/run.sh no longer ends with exec build/release/src/spillway serve \"\$@\""

read -r port redis_port grpc_port <<<"$(free_ports 3)"
use_test_containers_conf
start_redis "$redis_port"
version=$("$binary" --version | sed -n 's/^spillway //p')

# --- The stand-ins.
stop_serve() {
  [ -n "$serve_pid" ] || return 0
  kill "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
  serve_pid=""
}
wait_healthy() {  # URL: fails unless it answers 200 within 30 s
  for _ in $(seq 300); do
    command curl -sf --max-time 2 -o /dev/null "$1" && return 0
    sleep 0.1
  done
  fail "$1 did not answer 200 within 30 s"
}
scripts/run.sh() {
  stop_serve
  local args=() arg
  for arg in "$@"; do args+=("${arg//127.0.0.1:6379/127.0.0.1:$redis_port}"); done
  "$binary" serve --listen "127.0.0.1:$port" "${args[@]}" >"$work/serve.log" 2>&1 &
  serve_pid=$!
  wait_healthy "http://127.0.0.1:$port/healthz"
  echo "(scripts/run.sh $*: serving on 127.0.0.1:$port)"
}
build/release/src/spillway() { "$binary" "$@"; }
curl() {
  local args=() arg rc=0
  for arg in "$@"; do args+=("${arg//localhost:8080/localhost:$port}"); done
  [[ "${args[*]}" != *:8080* ]] || fail "curl $*: only localhost:8080 has a stand-in port here"
  command curl --max-time 10 "${args[@]}" >"$work/curl.out" 2>"$work/curl.err" || rc=$?
  cat "$work/curl.out"
  [ "$rc" = 0 ] || fail "curl $* failed (exit $rc: $(cat "$work/curl.err"))"
}
scripts/image.sh() { "$source_dir/scripts/image.sh" --binary "$binary" --tag "$tag" "$@"; }
podman() {
  if [ "$1" = run ]; then
    shift
    local image="" rest=()
    while [ $# -gt 0 ]; do
      case "$1" in
        --rm) shift ;;
        -p) shift 2 ;;
        -*) fail "podman run option $1 has no stand-in here" ;;
        *) image=$1; shift; rest=("$@"); break ;;
      esac
    done
    [ "$image" = "spillway:$version" ] || fail "the README runs image $image, not spillway:$version"
    [ ${#rest[@]} -eq 0 ] || fail "podman run's arguments after the image have no stand-in"
    stop_serve
    container=$name
    command podman run -d --name "$container" --network host "$tag" serve \
      --config /etc/spillway/spillway.yaml --listen "127.0.0.1:$port" >/dev/null
    wait_for_log "$container" "listening on 127\\.0\\.0\\.1:$port"
  else
    fail "podman $* has no stand-in here"
  fi
}
kubectl() {
  case "${1:-} ${2:-} ${3:-}" in
    "apply -k deploy/kubernetes") kube_apply ;;
    "port-forward deployment/spillway 8080:8080")
      grep -qx '  name: spillway' deploy/kubernetes/deployment.yaml ||
        fail "deploy/kubernetes/deployment.yaml's Deployment is not named spillway"
      grep -A1 -- '- name: http$' deploy/kubernetes/deployment.yaml | grep -q 'containerPort: 8080' ||
        fail "the Deployment's http port is not 8080"
      # As kubectl port-forward, which needs the pod running: its /healthz answers.
      wait_healthy "http://127.0.0.1:$port/healthz"
      echo "(kubectl port-forward: the pod is on the host's network at 127.0.0.1:$port)"
      ;;
    *) fail "kubectl $* has no stand-in here" ;;
  esac
}
kube_apply() {
  local listed
  listed=$(awk '/^resources:/ {r = 1; next} r && /^  - / {print $2} r && !/^  - / {r = 0}' \
    deploy/kubernetes/kustomization.yaml)
  [ -n "$listed" ] || fail "deploy/kubernetes/kustomization.yaml lists no resources"
  for file in $listed; do
    [ -f "deploy/kubernetes/$file" ] || fail "kustomization.yaml lists $file, which is missing"
  done
  echo "(kubectl apply -k: no cluster here; $(echo $listed) exist; podman kube play runs the" \
    "ConfigMap and the Deployment)"
  if [ -n "$container" ]; then stop_cleanly "$container"; container=""; fi
  stop_serve
  played="$work/play.yaml"
  node "$source_dir/tests/kubernetes/play_manifest.mjs" "$tag" "$port" "$grpc_port" "$played" \
    "$name-kube" >/dev/null
  command podman kube play --replace "$played" >"$work/play.log" 2>&1 ||
    { cat "$work/play.log" >&2; fail "podman kube play failed"; }
  kube_container=$(awk 'c {print; exit} /^Container:/ {c = 1}' "$work/play.log")
  [ -n "$kube_container" ] || { cat "$work/play.log" >&2; fail "kube play started no container"; }
  wait_for_log "$kube_container" "listening on 127\\.0\\.0\\.1:$port"
}

# --- The blocks, each followed by the checks of what its comments say.
cd "$work"
ln -s "$source_dir/deploy" deploy
curl_line() { grep -m1 '^curl ' "$work/block-$1.sh"; }  # N: block N's first curl line
status_of() { sed -n '1s/^HTTP\/1\.1 \([0-9]*\).*/\1/p' "$work/curl.out"; }
run_block() {  # N TITLE
  local t0=$SECONDS
  step "block $1: $2"
  sed 's/^/  | /' "$work/block-$1.sh"
  # A README line that fails stops the test (set -e); this names it first.
  trap 'echo "$test_name: FAIL: block '"$1"' line $LINENO: $BASH_COMMAND" >&2' ERR
  source "$work/block-$1.sh"
  trap - ERR
  echo
  echo "-- block $1 took $((SECONDS - t0)) s"
}

run_block 1 "run it, ask it"
[ "$(status_of)" = 200 ] || fail "the first check answered $(status_of), not 200"
grep -q '^RateLimit: ' "$work/curl.out" || fail "the first check has no RateLimit header"
for _ in $(seq 10); do eval "$(curl_line 1)" >/dev/null; done
[ "$(status_of)" = 429 ] || fail "the 11th check answered $(status_of), not 429"
grep -qi '^Retry-After: [0-9]' "$work/curl.out" || fail "the 11th check has no Retry-After"

run_block 2 "your own limits"
[ "$(status_of)" = 200 ] || fail "the check answered $(status_of), not 200"
promised=$(sed -n 's/^# 200, \(RateLimit-Policy: .*\)$/\1/p' "$work/block-2.sh")
[ -n "$promised" ] || fail "block 2 no longer says which RateLimit-Policy to expect"
grep -qF "$promised" "$work/curl.out" || fail "the check's headers lack '$promised'"

run_block 3 "share limits through Redis"
[ "$(status_of)" = 200 ] || fail "the check answered $(status_of), not 200"
keys=$(redis-cli -p "$redis_port" --scan --pattern 'spillway:*' | wc -l)
[ "$keys" -gt 0 ] || fail "the check left no spillway:* key in Redis"
echo "(redis: $keys spillway:* keys)"

run_block 4 "Prometheus"
grep -q '^spillway_decisions_total{layer="edge",result="allowed"} [1-9]' "$work/curl.out" ||
  fail "/metrics counts no allowed edge decision"

run_block 5 "the container image"
grep -qx '{"status":"ok"}' "$work/curl.out" || fail "the image's /healthz answered $(cat "$work/curl.out")"

run_block 6 "Kubernetes"
grep -q '^{"status":"ready"' "$work/curl.out" || fail "the Deployment's /readyz answered $(cat "$work/curl.out")"
stop_cleanly "$kube_container"
command podman kube play --down "$played" >/dev/null 2>"$work/down.log" ||
  { cat "$work/down.log" >&2; fail "podman kube play --down failed"; }
played=""

echo "quick_start_test: ok ($((SECONDS - started)) s)"
