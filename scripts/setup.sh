#!/usr/bin/env bash
# Installs what spillway needs to build, test and benchmark on Debian bookworm (apt-get).
# Safe to run again: it installs only what is missing.
# Usage: scripts/setup.sh [--browser] [EXTRA_PACKAGE ...]
#   --browser: also Debian's chromium and playwright-core, for the browser tests and the docs'
#              pictures (scripts/test.sh, scripts/pictures.sh); the run command needs neither.
#   EXTRA_PACKAGE: more Debian packages (scripts/fuzz.sh adds clang-16 and libFuzzer).
set -euo pipefail
browser=false
if [ "${1:-}" = "--browser" ]; then
  browser=true
  shift
fi

packages=(
  cmake ninja-build g++ pkg-config
  libboost1.81-dev libhiredis-dev libyaml-cpp-dev libssl-dev openssl
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  redis-server redis-sentinel redis-tools nginx-light haproxy wrk clang-format prometheus
  faketime  # the fault suite's clock faults (tests/faults/)
  dpkg-dev file curl systemd  # tests/package/deb_test.sh: cpack's dpkg-shlibdeps, the test's tools
  buildah podman runc  # scripts/image.sh and the container tests (tests/container/)
  "$@"
)
"$browser" && packages+=(chromium)

missing=()
# Node.js for the gRPC tests' client: Debian's packages only when there is no node already (a
# NodeSource nodejs, which bundles npm, conflicts with Debian's npm).
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The Debian packages start redis-server and nginx as system services; the tests start their own
# on free loopback ports and do not need those.

# The gRPC tests' client is another implementation (Node's @grpc/grpc-js, versions pinned in
# tests/grpc/package-lock.json).
cd "$(dirname "$0")/.."
if [ ! -d tests/grpc/node_modules/@grpc/grpc-js ] || [ ! -d tests/grpc/node_modules/@grpc/proto-loader ]; then
  echo "setup: npm ci in tests/grpc"
  (cd tests/grpc && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
# The charting library compiled into spillway's pages (uPlot, MIT; version pinned in
# third_party/uplot/package-lock.json): the build embeds its dist/ files.
if [ ! -f third_party/uplot/node_modules/uplot/dist/uPlot.iife.min.js ]; then
  echo "setup: npm ci in third_party/uplot"
  (cd third_party/uplot && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
# deploy/kubernetes/ is validated offline against the Kubernetes API schemas (kubernetes-models
# and yaml, versions pinned in tests/kubernetes/package-lock.json).
if [ ! -d tests/kubernetes/node_modules/kubernetes-models ] || [ ! -d tests/kubernetes/node_modules/yaml ]; then
  echo "setup: npm ci in tests/kubernetes"
  (cd tests/kubernetes && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
# The browser tests drive Debian's chromium with playwright-core (version pinned in
# tests/browser/package-lock.json; it downloads no browser of its own).
if "$browser" && [ ! -d tests/browser/node_modules/playwright-core ]; then
  echo "setup: npm ci in tests/browser"
  (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
