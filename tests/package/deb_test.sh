#!/usr/bin/env bash
# The Debian package, installed for real (ctest package.deb, registered in tests/CMakeLists.txt):
#   1. packs BUILD_DIR with cpack (cmake/package.cmake) and checks the .deb's name and fields;
#   2. installs it with dpkg on this machine (root, or passwordless sudo);
#   3. checks every file it should install, with its mode, and that `dpkg -L` lists it;
#   4. checks the systemd unit with `systemd-analyze verify` (offline: no running systemd needed);
#   5. runs the installed /usr/bin/spillway with the installed config as an unprivileged user on
#      a free loopback port, sends POST /v1/check, reloads with SIGHUP, checks it still answers,
#      and stops it with SIGTERM;
#   6. purges the package and checks that every file is gone and dpkg no longer knows it.
# Every step fails the test; nothing is skipped. The trap stops the server and purges the
# package whatever happens. A marker file records that this test installed the package, so a
# run killed before its trap ran (ctest's timeout) is cleaned up by the next run, while a
# spillway package installed by someone else is never touched (the test fails instead).
#
# Usage: tests/package/deb_test.sh BUILD_DIR [CPACK]
#   BUILD_DIR: a configured and built tree (spillway_cli and the libraries);
#   CPACK: the cpack to use (default: cpack on PATH).
set -euo pipefail

fail() {
  echo "deb_test: FAIL: $*" >&2
  exit 1
}
step() { echo "== deb_test: $*"; }

{ [ $# -ge 1 ] && [ $# -le 2 ]; } || fail "usage: $0 BUILD_DIR [CPACK]"
build_dir=$(cd "$1" && pwd) || fail "no build directory $1"
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
cpack=${2:-cpack}
[ -f "$build_dir/CPackConfig.cmake" ] ||
  fail "$build_dir/CPackConfig.cmake is missing: configure the tree with cmake first"

# dpkg and apt-get need root: directly, or through sudo without a password prompt.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  else
    sudo -n "$@"
  fi
}
as_root true || fail "installing a package needs root (or passwordless sudo)"
for tool in dpkg dpkg-deb dpkg-query "$cpack" curl file flock systemd-analyze setpriv; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/setup.sh installs it)"
done

started=$(date +%s)
# One run at a time on a machine (ctest's RUN_SERIAL covers one ctest only): a second run would
# take the first one's package for a leftover and purge it.
lock=/var/tmp/spillway-deb-test.lock
[ -e "$lock" ] || as_root touch "$lock"
exec 9<"$lock"
flock -w 300 9 || fail "another deb_test.sh has held $lock for 5 min"
marker=/var/tmp/spillway-deb-test.installed
# With the lock held, any scratch directory of this test is a killed run's: remove them.
as_root rm -rf /tmp/spillway-deb-test.??????
work=$(mktemp -d /tmp/spillway-deb-test.XXXXXX)
server_pid=""

cleanup() {
  local rc=$?
  set +e
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid"
    wait "$server_pid" 2>/dev/null
  fi
  if [ -e "$marker" ]; then
    echo "deb_test: cleanup: purging the spillway package this test installed" >&2
    as_root dpkg --purge spillway >"$work/cleanup-purge.log" 2>&1 ||
      { cat "$work/cleanup-purge.log" >&2; echo "deb_test: cleanup: dpkg --purge failed" >&2; }
    as_root rm -f "$marker"
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

package_status() {  # installed, config-files, half-installed, ...; empty when dpkg has no record
  dpkg-query -W -f='${db:Status-Status}' spillway 2>/dev/null || true
}

# --- 0. the machine holds no spillway package, or only one left by an interrupted run of this test
status=$(package_status)
if [ -n "$status" ] && [ "$status" != not-installed ]; then
  [ -e "$marker" ] || fail "a spillway package not installed by this test is on this machine" \
    "(dpkg status: $status); remove it (dpkg --purge spillway) or run the test elsewhere"
  step "purging the package left by an interrupted run"
  as_root dpkg --purge spillway
  as_root rm -f "$marker"
fi

# --- 1. pack
step "cpack -G DEB ($build_dir)"
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build_dir/CPackConfig.cmake")
[ -n "$version" ] || fail "no CPACK_PACKAGE_VERSION in $build_dir/CPackConfig.cmake"
arch=$(dpkg --print-architecture)
deb="$work/out/spillway_${version}_${arch}.deb"
(cd "$work" && "$cpack" -G DEB -B "$work/out" --config "$build_dir/CPackConfig.cmake") \
  >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log" >&2; fail "cpack failed"; }
[ -f "$deb" ] || { ls -l "$work/out" >&2; fail "cpack made no $(basename "$deb")"; }
echo "$(basename "$deb"): $(stat -c %s "$deb") bytes"

field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = spillway ] || fail "Package: is '$(field Package)'"
[ "$(field Version)" = "$version" ] || fail "Version: is '$(field Version)', not $version"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture: is '$(field Architecture)'"
[ -n "$(field Maintainer)" ] || fail "no Maintainer:"
[ -n "$(field Description)" ] || fail "no Description:"
# The description names every command the binary has (its `help` lists them).
commands=$("$build_dir/src/spillway" help | awk '/^commands:/ {c = 1; next} c && /^  [a-z]/ {print $1} c && !/^  / {c = 0}')
[ -n "$commands" ] || fail "spillway help lists no commands"
for command in $commands; do
  grep -qw -- "$command" <<<"$(field Description)" || fail "Description: does not name $command"
done
depends=$(field Depends)
echo "Depends: $depends"
# dpkg-shlibdeps' answer: every library the binary links, by its Debian package; and procps
# (the unit's ExecReload= runs /bin/kill).
for lib in libc6 libstdc++6 libhiredis libyaml-cpp libssl3 'libgrpc++' libprotobuf procps; do
  [[ ", $depends" == *", $lib"* ]] || fail "Depends: lacks $lib"
done
dpkg-deb -e "$deb" "$work/control"
[ "$(cat "$work/control/conffiles")" = /etc/spillway/spillway.yaml ] ||
  fail "conffiles is '$(cat "$work/control/conffiles")'"
for script in postinst prerm postrm; do
  [ "$(stat -c %a "$work/control/$script")" = 755 ] || fail "$script is not mode 755"
done

# --- 2. install
step "dpkg -i $(basename "$deb")"
as_root touch "$marker"
if ! as_root env DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$work/dpkg-i.log" 2>&1; then
  cat "$work/dpkg-i.log" >&2
  grep -q 'dependency problems' "$work/dpkg-i.log" || fail "dpkg -i failed"
  step "dpkg reports missing dependencies: apt-get install -f"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -f ||
    fail "apt-get install -f could not install the dependencies"
fi
[ "$(package_status)" = installed ] || fail "dpkg status after install: '$(package_status)'"

# --- 3. files
step "installed files"
listed=$(dpkg -L spillway)
libspillway=$(grep '/libspillway\.a$' <<<"$listed") || fail "dpkg -L lists no libspillway.a"
libdir=$(dirname "$libspillway")
[[ "$libdir" =~ ^/usr/lib(/[a-z0-9_-]+)?$ ]] || fail "the libraries are in $libdir"
expect() {  # PATH MODE: a regular file, root-owned, with this mode, listed by dpkg -L
  local path=$1 mode=$2
  [ -f "$path" ] || fail "$path is missing"
  [ "$(stat -c '%a %U:%G' "$path")" = "$mode root:root" ] ||
    fail "$path is $(stat -c '%a %U:%G' "$path"), not $mode root:root"
  grep -qxF "$path" <<<"$listed" || fail "dpkg -L spillway does not list $path"
}
expect /usr/bin/spillway 755
expect /etc/spillway/spillway.yaml 644
expect /lib/systemd/system/spillway.service 644
expect /usr/share/doc/spillway/uPlot.LICENSE 644
expect /usr/share/doc/spillway/copyright 644
expect /usr/share/doc/spillway/THIRD_PARTY_NOTICES 644
expect /usr/share/doc/spillway/README.md 644
for doc in "$source_dir"/docs/*.md; do
  expect "/usr/share/doc/spillway/docs/$(basename "$doc")" 644
done
# The copyright file is machine-readable (DEP-5) and names the licence of the whole work.
head -1 /usr/share/doc/spillway/copyright |
  grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
  fail "/usr/share/doc/spillway/copyright is not in the DEP-5 format"
grep -qx 'License: Apache-2.0' /usr/share/doc/spillway/copyright ||
  fail "/usr/share/doc/spillway/copyright names no Apache-2.0 licence"
for header in memory_store.h open_store.h policy_engine.h; do
  expect "/usr/include/spillway/$header" 644
done
for lib in spillway spillway_core spillway_memory spillway_redis spillway_policy; do
  expect "$libdir/lib$lib.a" 644
done
for pc in spillway.pc spillway-memory.pc; do
  expect "$libdir/pkgconfig/$pc" 644
done
for file in spillwayConfig.cmake spillwayConfigVersion.cmake spillwayTargets.cmake; do
  expect "$libdir/cmake/spillway/$file" 644
done
compgen -G "$libdir/cmake/spillway/spillwayTargets-*.cmake" >/dev/null ||
  fail "no per-configuration spillwayTargets-*.cmake in $libdir/cmake/spillway"
# Every header and file of the package is owned by root and not writable by others.
while IFS= read -r path; do
  [ -e "$path" ] || fail "dpkg -L lists $path, which does not exist"
  [ -L "$path" ] && continue
  [ "$(stat -c %U:%G "$path")" = root:root ] || fail "$path is owned by $(stat -c %U:%G "$path")"
  [ $((0$(stat -c %a "$path") & 022)) -eq 0 ] || fail "$path is writable by group or others"
done <<<"$listed"
dpkg-query -W -f='${Conffiles}\n' spillway | grep -q '^ /etc/spillway/spillway.yaml ' ||
  fail "dpkg does not record /etc/spillway/spillway.yaml as a conffile"
# Every installed file matches the package's md5sums (no output when all do).
if ! verify_out=$(dpkg --verify spillway 2>&1) || [ -n "$verify_out" ]; then
  fail "dpkg --verify spillway: $verify_out"
fi
file -L /usr/bin/spillway | grep -q ', stripped' || fail "/usr/bin/spillway is not stripped"
[ "$(/usr/bin/spillway --version)" = "spillway $version" ] ||
  fail "/usr/bin/spillway --version says '$(/usr/bin/spillway --version)'"
/usr/bin/spillway validate /etc/spillway/spillway.yaml

# --- 4. the unit
step "systemd-analyze verify /lib/systemd/system/spillway.service"
# Verification loads the unit into a private manager: it needs no running systemd. It checks
# the syntax, every directive, the dependencies it names and that ExecStart's command exists.
# It exits 0 after an unknown directive or a value it cannot parse (it logs "…, ignoring"), so
# any message about the unit counts as a failure, not only a non-zero exit status.
verify_rc=0
systemd-analyze verify /lib/systemd/system/spillway.service >"$work/verify.log" 2>&1 ||
  verify_rc=$?
cat "$work/verify.log"
[ "$verify_rc" -eq 0 ] || fail "systemd-analyze verify exited with $verify_rc"
if grep -q 'spillway' "$work/verify.log"; then
  fail "systemd-analyze verify reported problems with spillway.service"
fi

# --- 5. run the installed binary with the installed config
step "spillway serve, as nobody, with /etc/spillway/spillway.yaml on a free loopback port"
log="$work/serve.log"
# Port 0: the kernel picks a free port, which serve prints; no race with other listeners.
# As root, the server runs as nobody, as the unit runs it as a dynamic user: the installed
# config must be readable by an unprivileged user. (Its log is opened by this shell.)
run_as=()
[ "$(id -u)" -eq 0 ] && run_as=(setpriv --reuid=nobody --regid=nogroup --clear-groups --no-new-privs)
"${run_as[@]}" /usr/bin/spillway serve --config /etc/spillway/spillway.yaml \
  --listen 127.0.0.1:0 2>"$log" &
server_pid=$!
wait_for_log() {  # PATTERN: up to 10 s for a line of the server's log
  for _ in $(seq 100); do
    grep -q "$1" "$log" && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; fail "spillway serve exited"; }
    sleep 0.1
  done
  cat "$log" >&2
  fail "spillway serve did not log '$1' within 10 s"
}
wait_for_log 'listening on 127\.0\.0\.1:[0-9]'
port=$(sed -n 's/^spillway serve: listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$log")
[ -n "$port" ] || { cat "$log" >&2; fail "no port in the server's log"; }
grep -q '(backend memory, 3 layers)' "$log" || { cat "$log" >&2; fail "not the shipped config"; }

check() {  # one POST /v1/check; the answer must be a 200 JSON decision
  local answer
  answer=$(curl -sS --max-time 5 -w '\n%{http_code}' -XPOST "http://127.0.0.1:$port/v1/check" \
    -H 'Content-Type: application/json' \
    -d '{"ip":"203.0.113.7","api_key":"k1","endpoint":"/search"}') ||
    fail "POST /v1/check: curl failed"
  local body=${answer%$'\n'*} code=${answer##*$'\n'}
  echo "POST /v1/check: $code $body"
  [ "$code" = 200 ] || fail "POST /v1/check answered $code"
  [[ "$body" == '{"allowed":true,'* ]] || fail "the answer has no \"allowed\":true first"
  for layer in edge gateway endpoint; do
    [[ "$body" == *"\"name\":\"$layer\""* ]] || fail "the answer has no layer $layer"
  done
}
check
kill -HUP "$server_pid"
wait_for_log "reloaded /etc/spillway/spillway.yaml"
check
kill -TERM "$server_pid"
serve_rc=0
wait "$server_pid" || serve_rc=$?
server_pid=""
[ "$serve_rc" -eq 0 ] || { cat "$log" >&2; fail "spillway serve exited with $serve_rc on SIGTERM"; }
grep -q 'SIGTERM: draining and stopping' "$log" || { cat "$log" >&2; fail "no clean stop"; }

# --- 6. purge
step "dpkg --purge spillway"
as_root dpkg --purge spillway
as_root rm -f "$marker"
while IFS= read -r path; do
  # Directories shared with other packages (/usr, /usr/bin, ...) stay; files and our own
  # directories go.
  if [ -e "$path" ] && ! [ -d "$path" ]; then fail "$path is still there after purge"; fi
done <<<"$listed"
for dir in /etc/spillway /usr/include/spillway "$libdir/cmake/spillway"; do
  [ ! -e "$dir" ] || fail "$dir is still there after purge"
done
if dpkg -s spillway >/dev/null 2>&1; then
  fail "dpkg -s spillway still succeeds after purge"
fi

echo "deb_test: ok ($(($(date +%s) - started)) s)"
