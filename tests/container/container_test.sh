#!/usr/bin/env bash
# The container image and the Kubernetes Deployment, run for real (ctest container.image,
# registered in tests/CMakeLists.txt). The image is built once, then:
#   1. scripts/image.sh builds it from BINARY; its config (user, entrypoint, stop signal, port,
#      OCI labels and annotations) and its files (no shell; the binary, its libraries, the
#      config, CA certificates, passwd/group, licences: nothing else) are checked;
#   2. its default command, on a read-only root filesystem without network, listens on
#      0.0.0.0:8080 inside the container, and `podman stop` (SIGTERM) ends it with status 0;
#   3. podman runs it on the host's network with a redis-server this test started, on loopback:
#      /healthz, /readyz, one POST /v1/check, the counts in that Redis, the process's uid, then
#      SIGTERM -> exit status 0;
#   4. `podman kube play` runs deploy/kubernetes/'s ConfigMap and Deployment (as
#      tests/kubernetes/play_manifest.mjs adapts them: this image, the host's network, loopback
#      and free ports): it serves, the probes' paths answer 200 on the probes' port, the root
#      filesystem is read-only and the user non-root; then it is torn down.
# Every step fails the test; nothing is skipped. The trap removes what the test made.
#
# Usage: tests/container/container_test.sh BINARY
#   BINARY: a built spillway (the ci preset's build/ci/src/spillway).
set -euo pipefail

test_name=container_test
started=$SECONDS
source "$(dirname "$0")/../support/shell/podman_lib.sh"

take_binary_and_tools "$@" -- buildah podman runc curl redis-server redis-cli node tar
[ -d "$source_dir/tests/kubernetes/node_modules/yaml" ] ||
  fail "tests/kubernetes/node_modules is missing (scripts/setup.sh runs npm ci there)"

work=$(mktemp -d /tmp/spillway-container-test.XXXXXX)
use_test_containers_conf  # tests/support/shell/podman_lib.sh says why

# Names of this run (the process id keeps two runs apart; a killed run's leftovers are removed
# below and by --replace).
tag="localhost/spillway-test:$$"
name="spillway-test-$$"
redis_pid=""
played=""
cleanup() {
  local rc=$?
  set +e
  if [ -n "$played" ]; then
    podman kube play --down "$played" >/dev/null 2>&1
  fi
  podman volume rm -f "$name-kube-config" >/dev/null 2>&1
  for c in "$name" "$name-default" "$name-files"; do
    podman rm -f -t 0 "$c" >/dev/null 2>&1
  done
  podman rmi -f "$tag" >/dev/null 2>&1
  if [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null
    wait "$redis_pid" 2>/dev/null
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Images of earlier runs that were killed before their trap ran.
for old in $(podman images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null |
  grep '^localhost/spillway-test:' || true); do
  kill -0 "${old##*:}" 2>/dev/null || podman rmi -f "$old" >/dev/null 2>&1 || true
done

# --- 1. build the image (once for the whole test)
step "scripts/image.sh --binary $binary --tag $tag"
"$source_dir/scripts/image.sh" --binary "$binary" --tag "$tag"
version=$("$binary" --version | sed -n 's/^spillway //p')
inspect() { podman image inspect --format "$1" "$tag"; }
size=$(inspect '{{.Size}}')
echo "image size: $size bytes ($((size / 1024 / 1024)) MiB)"
[ "$(inspect '{{.Config.User}}')" = 65532:65532 ] || fail "the image's user is '$(inspect '{{.Config.User}}')'"
[ "$(inspect '{{.Config.StopSignal}}')" = SIGTERM ] || fail "no STOPSIGNAL SIGTERM"
[ "$(inspect '{{json .Config.Entrypoint}}')" = '["/usr/bin/spillway"]' ] ||
  fail "entrypoint is $(inspect '{{json .Config.Entrypoint}}')"
[ "$(inspect '{{json .Config.Cmd}}')" = '["serve","--config","/etc/spillway/spillway.yaml"]' ] ||
  fail "command is $(inspect '{{json .Config.Cmd}}')"
inspect '{{json .Config.ExposedPorts}}' | grep -q '"8080/tcp"' || fail "port 8080 is not exposed"
for key in title version revision created licenses; do
  value=$(inspect "{{index .Config.Labels \"org.opencontainers.image.$key\"}}")
  [ -n "$value" ] && [ "$value" != '<no value>' ] || fail "no label org.opencontainers.image.$key"
  annotation=$(inspect "{{index .Annotations \"org.opencontainers.image.$key\"}}")
  [ "$annotation" = "$value" ] || fail "annotation org.opencontainers.image.$key is '$annotation'"
done
[ "$(inspect '{{index .Config.Labels "org.opencontainers.image.version"}}')" = "$version" ] ||
  fail "label version is not $version"
[ "$(inspect '{{index .Config.Labels "org.opencontainers.image.licenses"}}')" = Apache-2.0 ] ||
  fail "label licenses is not Apache-2.0"

# The files: the binary, its libraries, the config, certificates, passwd/group, nsswitch.conf,
# licences and /tmp; nothing else (no shell, no package manager).
podman create --name "$name-files" "$tag" >/dev/null
podman export "$name-files" | tar -t | sed 's|^\./||; s|/$||' | sort >"$work/files"
podman rm "$name-files" >/dev/null
allowed='^(usr|usr/bin|usr/bin/spillway|etc|etc/passwd|etc/group|etc/nsswitch.conf|etc/spillway'
allowed+='|etc/spillway/spillway.yaml|etc/ssl|etc/ssl/certs|etc/ssl/certs/ca-certificates.crt'
allowed+='|usr/lib/ssl|usr/lib/ssl/cert.pem|usr/lib/ssl/certs|tmp|usr/share|usr/share/doc'
allowed+='|usr/share/doc/[a-z0-9.+-]+|usr/share/doc/[a-z0-9.+-]+/copyright'
allowed+='|usr/share/doc/spillway/(LICENSE|THIRD_PARTY_NOTICES|uPlot.LICENSE)'
allowed+='|lib|lib64|lib/x86_64-linux-gnu|lib/aarch64-linux-gnu|usr/lib|usr/lib/x86_64-linux-gnu'
allowed+='|usr/lib/aarch64-linux-gnu|(usr/)?lib(64)?(/[a-z0-9_-]+-linux-gnu)?/(ld-linux|lib)[^/]*\.so[.0-9]*'
allowed+='|dev|proc|sys|run|run/.*|etc/hosts|etc/hostname|etc/resolv.conf)$'
extra=$(grep -Ev "$allowed" "$work/files" || true)
[ -z "$extra" ] || fail "files the image should not hold: $extra"
if grep -Eq '(^|/)(sh|bash|dash|busybox|ash)$' "$work/files"; then
  fail "the image holds a shell"
fi
for lib in $(ldd "$binary" | grep -o '/[^ ]*' | sort -u); do
  grep -qxF "${lib#/}" "$work/files" || fail "the image lacks $lib (ldd $binary)"
done
for file in usr/bin/spillway etc/spillway/spillway.yaml etc/ssl/certs/ca-certificates.crt \
  etc/passwd etc/group usr/share/doc/spillway/LICENSE usr/share/doc/spillway/THIRD_PARTY_NOTICES; do
  grep -qxF "$file" "$work/files" || fail "the image lacks /$file"
done
echo "image files: $(wc -l <"$work/files") entries, no shell"

# --- 2. the default command: 0.0.0.0:8080 inside the container (its own network namespace,
# with no network at all here), read-only root filesystem, SIGTERM -> 0.
step "podman run (default command, --network none, --read-only)"
podman run -d --name "$name-default" --network none --read-only "$tag" >/dev/null
wait_for_log "$name-default" 'listening on 0\.0\.0\.0:8080 \(backend memory, 3 layers\)'
stop_cleanly "$name-default"

# --- 3. on the host's network with Redis on loopback
read -r redis_port http_port grpc_port <<<"$(free_ports 3)"
step "redis-server on 127.0.0.1:$redis_port"
start_redis "$redis_port"

step "podman run --network host, backend redis://127.0.0.1:$redis_port/0"
podman run -d --name "$name" --network host "$tag" serve --config /etc/spillway/spillway.yaml \
  --listen 127.0.0.1:0 --backend "redis://127.0.0.1:$redis_port/0" >/dev/null
line=$(wait_for_log "$name" 'listening on 127\.0\.0\.1:[0-9]+ \(backend redis')
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' <<<"$line")
[ -n "$port" ] || fail "no port in '$line'"
base="http://127.0.0.1:$port"
expect_http GET "$base/healthz" "" 200 '{"status":"ok"}'
expect_http GET "$base/readyz" "" 200 '{"status":"ready"'
expect_http POST "$base/v1/check" '{"ip":"203.0.113.7","api_key":"k1","endpoint":"/search"}' \
  200 '{"allowed":true,'
keys=$(redis-cli -p "$redis_port" --scan --pattern 'spillway*' | wc -l)
[ "$keys" -gt 0 ] || fail "the check left no spillway key in Redis"
echo "redis: $keys spillway keys after one check"
pid=$(podman inspect --format '{{.State.Pid}}' "$name")
uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
[ "$uid" != 0 ] || fail "spillway runs as root in the container"
echo "spillway runs as uid $uid (host pid $pid)"
stop_cleanly "$name"

# --- 4. podman kube play: deploy/kubernetes/'s ConfigMap and Deployment
step "podman kube play deploy/kubernetes (configmap.yaml, deployment.yaml)"
played="$work/play.yaml"
probes=$(node "$source_dir/tests/kubernetes/play_manifest.mjs" "$tag" "$http_port" "$grpc_port" \
  "$played" "$name-kube")
echo "probes: $probes"
field() { node -e 'const v = JSON.parse(process.argv[1]); console.log(eval("v." + process.argv[2]))' \
  "$probes" "$1"; }
podman kube play --replace "$played" >"$work/play.log" 2>&1 ||
  { cat "$work/play.log" >&2; fail "podman kube play failed"; }
# It prints "Pod:", the pod's id, "Container:", the id of each container it started.
kube_container=$(awk 'c {print; exit} /^Container:/ {c = 1}' "$work/play.log")
[ -n "$kube_container" ] || { cat "$work/play.log" >&2; fail "podman kube play started no container"; }
kube_name=$(podman inspect --format '{{.Name}}' "$kube_container")
echo "podman kube play: container $kube_name"
[[ "$kube_name" == "$(field deployment)"*"-$(field container)" ]] ||
  fail "the container is $kube_name, not the Deployment's $(field container)"
wait_for_log "$kube_container" "listening on 127\\.0\\.0\\.1:$http_port \\(backend memory, 2 layers\\)"
wait_for_log "$kube_container" "gRPC rate limit service listening on 127\\.0\\.0\\.1:$grpc_port"
for probe in readiness liveness; do
  expect_http GET "http://127.0.0.1:$(field "$probe.port")$(field "$probe.path")" "" 200 '{"status":'
done
expect_http POST "http://127.0.0.1:$http_port/v1/check" '{"ip":"203.0.113.8","api_key":"k2"}' \
  200 '{"allowed":true,'
[ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$kube_container")" = true ] ||
  fail "the Deployment's container has a writable root filesystem"
pid=$(podman inspect --format '{{.State.Pid}}' "$kube_container")
uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
[ "$uid" = 65532 ] || fail "the Deployment's container runs as uid $uid, not 65532"
stop_cleanly "$kube_container"
podman kube play --down "$played" >/dev/null 2>"$work/down.log" ||
  { cat "$work/down.log" >&2; fail "podman kube play --down failed"; }
played=""
podman container exists "$kube_container" && fail "$kube_container is still there after --down"

echo "container_test: ok ($((SECONDS - started)) s; image $tag: $size bytes)"
