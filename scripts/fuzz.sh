#!/usr/bin/env bash
# Coverage-guided fuzzing: builds the libFuzzer targets in fuzz/ (the fuzz preset: clang-16,
# ASan+UBSan) and runs each one for SECONDS (default 60) from a copy of its seed corpus, as many
# at once as there are cores (5 targets x 60 s take 3 minutes on 2 cores, not 5).
# Fails if a target crashes, leaks, times out, runs out of memory or finds an input that breaks
# one of its invariants; that input is kept in build/fuzz/artifacts/ (replay it with
# `build/fuzz/fuzz/<target>_fuzz FILE`).
# FUZZ_SEED=N makes a run reproducible (libFuzzer's -seed; CI uses 1 so that a change that
# passes here passes there); unset, each run explores from a random seed.
# --build installs and builds the targets only (scripts/test.sh builds them while tests run).
# Usage: [FUZZ_SEED=N] scripts/fuzz.sh [SECONDS | --build]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
build_only=false
if [ "$seconds" = --build ]; then
  build_only=true
elif ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS | --build]   (seconds per target, default 60)" >&2
  exit 2
fi

# libFuzzer needs Clang; clang-16 is the oldest Debian bookworm Clang that compiles spillway's
# C++23 against libstdc++ 12 (with the __cpp_concepts workaround in CMakeLists.txt).
scripts/setup.sh clang-16 libfuzzer-16-dev

echo "== build: fuzz"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)" --target request_fuzz config_fuzz url_fuzz rls_fuzz \
  trace_fuzz tenants_fuzz
"$build_only" && exit 0

artifacts=build/fuzz/artifacts
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export UBSAN_OPTIONS=print_stacktrace=1

targets=(request config url rls trace tenants)
# Runs one target for $seconds from a copy of its seed corpus; its output goes to its log.
fuzz_one() {
  local target=$1 corpus=$work/$1
  mkdir -p "$corpus"
  cp fuzz/corpus/"$target"/* "$corpus"/
  build/fuzz/fuzz/"${target}"_fuzz -seed="${FUZZ_SEED:-0}" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 \
    -dict=fuzz/"$target".dict -artifact_prefix="$artifacts/$target-" "$corpus" \
    >"$work/$target.log" 2>&1
}

# A libFuzzer process uses one core: the targets run nproc at a time (each still for $seconds).
jobs=$(nproc)
declare -A pid_of
running=0
for target in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  seeds=$(find fuzz/corpus/"$target" -type f | wc -l)
  echo "== fuzz: ${target}_fuzz for ${seconds}s ($seeds corpus inputs, -seed=${FUZZ_SEED:-0}, 0: random)"
  fuzz_one "$target" &
  pid_of[$target]=$!
  running=$((running + 1))
done

failed=0
for target in "${targets[@]}"; do
  log=$work/$target.log
  status=0
  wait "${pid_of[$target]}" || status=$?
  # libFuzzer ends with "#683269 DONE cov: 4749 ft: 19449 corp: 1571/914Kb ... exec/s: 2835
  # rss: 533Mb" and "Done 683269 runs in 241 second(s)".
  done_line=$(grep -a -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
  if [ "$status" -eq 0 ] && [ -n "$done_line" ]; then
    echo "$done_line" | awk -v t="${target}_fuzz" -v s="${took:-$seconds}" '{
      for (i = 1; i <= NF; i++) { if ($i ~ /:$/) v[$i] = $(i + 1) }
      runs = substr($1, 2); split(v["corp:"], c, "/")
      printf "fuzz: %s: ok, %s runs in %ss (%s/s), coverage %s edges, %s features, ", t, runs, s,
             v["exec/s:"], v["cov:"], v["ft:"]
      printf "corpus %s inputs (%s), rss %s\n", c[1], c[2], v["rss:"]
    }'
  else
    failed=1
    echo "fuzz: ${target}_fuzz: FAILED (exit status $status); its report:"
    # From the first error line on: the broken invariant or sanitizer report, the stack, the input.
    awk '/fuzz invariant violated|^==[0-9]+==|ERROR: libFuzzer|runtime error:/ { on = 1 } on' "$log" |
      grep -a -v '^#[0-9]' | head -n 80 || true
    sed -n 's/.*Test unit written to /fuzz: input kept as /p' "$log"
  fi
done

if [ "$failed" -ne 0 ]; then
  echo "== fuzzing found a problem (see above)"
  exit 1
fi
echo "== fuzzing found nothing"
