#!/usr/bin/env bash
# Builds the OCI image spillway:<version> with buildah, from scratch (no base image is pulled):
# the spillway binary (stripped) and exactly the files it needs at run time —
#   - the shared libraries `ldd` lists for it, at the paths ldd prints, and the dynamic loader;
#   - CA certificates (/etc/ssl/certs/ca-certificates.crt, for rediss:// backends);
#   - /etc/spillway/spillway.yaml (packaging/container/spillway.yaml: listens on 0.0.0.0:8080);
#   - /etc/passwd and /etc/group with root and the user it runs as (spillway, uid/gid 65532),
#     /etc/nsswitch.conf (host names from /etc/hosts, then DNS: a Redis by name);
#   - the licences: LICENSE, THIRD_PARTY_NOTICES, uPlot's, and the Debian copyright file of the
#     package of every library copied, under /usr/share/doc.
# No shell, no package manager, nothing else. It runs as uid 65532 (non-root), entrypoint
# /usr/bin/spillway, command `serve --config /etc/spillway/spillway.yaml`, stop signal SIGTERM
# (spillway drains and exits 0), port 8080, with the org.opencontainers.image.* labels and
# manifest annotations. Prints the image's name and size.
#
# Usage: scripts/image.sh [--binary PATH] [--tag NAME]
#   --binary: the spillway to put in (default: builds the release preset, as scripts/run.sh);
#   --tag:    the image name (default: spillway:<version of the binary>).
# Runs as root or rootless (buildah copies from a staging directory; no mount needed).
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir=$(pwd)

binary=""
tag=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --tag) tag=${2:?--tag needs a name}; shift 2 ;;
    *) echo "usage: scripts/image.sh [--binary PATH] [--tag NAME]" >&2; exit 2 ;;
  esac
done
for tool in buildah ldd strip dpkg-query; do
  command -v "$tool" >/dev/null || { echo "image.sh: $tool is missing (scripts/setup.sh)" >&2; exit 1; }
done
if [ -z "$binary" ]; then
  scripts/setup.sh
  cmake --preset release >/dev/null
  cmake --build --preset release --target spillway_cli >/dev/null
  binary=build/release/src/spillway
fi
[ -x "$binary" ] || { echo "image.sh: $binary is not an executable" >&2; exit 1; }
version=$("$binary" --version | sed -n 's/^spillway \([^ ]*\)$/\1/p')
[ -n "$version" ] || { echo "image.sh: $binary --version says no version" >&2; exit 1; }
tag=${tag:-spillway:$version}
uplot_licence=third_party/uplot/node_modules/uplot/LICENSE
[ -f "$uplot_licence" ] || { echo "image.sh: no $uplot_licence (scripts/setup.sh)" >&2; exit 1; }

stage=$(mktemp -d)
container=""
cleanup() {
  [ -n "$container" ] && buildah rm "$container" >/dev/null 2>&1
  rm -rf "$stage"
}
trap cleanup EXIT

# The binary, without its debug information.
install -D -m 755 "$binary" "$stage/usr/bin/spillway"
strip --strip-unneeded "$stage/usr/bin/spillway"

# Its libraries: every absolute path ldd prints ("libx.so.1 => /lib/.../libx.so.1 (0x...)" and
# the loader "/lib64/ld-linux-x86-64.so.2 (0x...)"), copied as files (symlinks followed) to that
# same path: the loader finds them in its default directories (there is no ld.so.cache).
libraries=$(ldd "$binary" | grep -o '/[^ ]*' | sort -u)
[ -n "$libraries" ] || { echo "image.sh: ldd lists no library for $binary" >&2; exit 1; }
paths=()
for library in $libraries; do
  install -D -m 644 "$(readlink -f "$library")" "$stage$library"
  paths+=("$library" "$(readlink -f "$library")")
done
chmod 755 "$stage"/lib64/ld-linux-*.so.* 2>/dev/null || true
# The Debian packages that ship them (one dpkg-query for all: either spelling of a merged-/usr
# path; "pkg:arch, pkg2: /path" lines), for their copyright files.
packages=$(dpkg-query -S "${paths[@]}" 2>/dev/null | sed 's/: .*//; s/, /\n/g' |
  sed 's/:.*//' | sort -u) || true
for package in $packages; do
  if [ -f "/usr/share/doc/$package/copyright" ]; then
    install -D -m 644 "/usr/share/doc/$package/copyright" "$stage/usr/share/doc/$package/copyright"
  fi
done

# CA certificates, where OpenSSL looks by default too (/usr/lib/ssl/cert.pem and certs/).
install -D -m 644 /etc/ssl/certs/ca-certificates.crt "$stage/etc/ssl/certs/ca-certificates.crt"
mkdir -p "$stage/usr/lib/ssl"
ln -s /etc/ssl/certs/ca-certificates.crt "$stage/usr/lib/ssl/cert.pem"
ln -s /etc/ssl/certs "$stage/usr/lib/ssl/certs"

# The config, the users, name resolution.
install -D -m 644 packaging/container/spillway.yaml "$stage/etc/spillway/spillway.yaml"
printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
  'spillway:x:65532:65532:spillway:/nonexistent:/sbin/nologin' >"$stage/etc/passwd"
printf '%s\n' 'root:x:0:' 'spillway:x:65532:' >"$stage/etc/group"
printf '%s\n' 'hosts: files dns' >"$stage/etc/nsswitch.conf"
chmod 644 "$stage/etc/passwd" "$stage/etc/group" "$stage/etc/nsswitch.conf"

# The licences.
install -D -m 644 LICENSE "$stage/usr/share/doc/spillway/LICENSE"
install -D -m 644 THIRD_PARTY_NOTICES "$stage/usr/share/doc/spillway/THIRD_PARTY_NOTICES"
install -D -m 644 packaging/debian/copyright "$stage/usr/share/doc/spillway/copyright"
install -D -m 644 "$uplot_licence" "$stage/usr/share/doc/spillway/uPlot.LICENSE"
# A /tmp for libraries that want one (mode 1777; the root filesystem may be read-only).
mkdir -m 1777 "$stage/tmp"

revision=$(git -C "$source_dir" rev-parse HEAD 2>/dev/null || echo unknown)
created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
oci=org.opencontainers.image
metadata=(
  "$oci.title=spillway"
  "$oci.description=exact rate limiter: HTTP check service, Envoy rate limit service (gRPC)"
  "$oci.version=$version"
  "$oci.revision=$revision"
  "$oci.created=$created"
  "$oci.licenses=Apache-2.0"
  "$oci.vendor=spillway developers"
  "$oci.documentation=README.md, docs/SPEC.md"
)
label_args=()
for entry in "${metadata[@]}"; do
  label_args+=(--label "$entry" --annotation "$entry")
done

container=$(buildah from --quiet scratch)
buildah copy --quiet --chown 0:0 "$container" "$stage" / >/dev/null
buildah config \
  --user 65532:65532 \
  --workingdir / \
  --port 8080/tcp \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --entrypoint '["/usr/bin/spillway"]' \
  --cmd '["serve", "--config", "/etc/spillway/spillway.yaml"]' \
  --stop-signal SIGTERM \
  --os linux --arch "$(dpkg --print-architecture)" \
  "${label_args[@]}" \
  "$container"
buildah commit --quiet --format oci --rm "$container" "$tag" >/dev/null
container=""
size=$(buildah images --format '{{.Size}}' "$tag" | head -1)
echo "image.sh: built $tag ($size, $(find "$stage" -type f | wc -l) files)"
