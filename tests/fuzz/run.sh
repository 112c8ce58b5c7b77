#!/usr/bin/env bash
# Builds kvpool's libFuzzer targets with clang (ASan + UBSan + coverage) and runs each for a
# bounded time, starting from its seed corpus in
# tests/fuzz/corpus/<target>/. Fails when any target finds a crash, a leak, undefined behaviour,
# a timeout or runs out of memory; the input that did it is left in <build>/artifacts/.
#
# Usage: tests/fuzz/run.sh [target...]          (default: every target)
# Environment:
#   FUZZ_SECONDS     seconds per target (default 60)
#   FUZZ_BUILD_DIR   build directory (default build-fuzz, beside build/). One already configured
#                    with -DKVPOOL_FUZZ=ON (scripts/test.sh's build-sanitize/, which also holds
#                    the sanitizer test suite) is used as it is; otherwise it is configured here
#                    for the fuzzers alone.
#   FUZZ_JOBS        build parallelism, and how many targets fuzz at once (default nproc)
#
# A crash found here: add the artifact to tests/fuzz/regressions/<target>/ (CTest replays it in
# every build from then on), fix the bug, and re-run.
# Running a target by hand: libFuzzer writes new inputs into the FIRST directory it is given, so
# put a scratch directory first and the repository's corpus after it:
#   build-fuzz/tests/fuzz/fuzz_master_service /tmp/scratch tests/fuzz/corpus/master_service
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD_DIR:-build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}
all=(frame_header parsers master_service data_request master_config prom_text attach_requests
     http_request)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

if ! grep -qs '^KVPOOL_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
  for cxx in clang++-14 clang++; do
    if command -v "$cxx" >/dev/null; then break; fi
  done
  cc=${cxx/clang++/clang}
  echo "=== kvpool fuzz: configuring ${build} with ${cxx} ==="
  CC=$cc CXX=$cxx cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKVPOOL_FUZZ=ON -DKVPOOL_BUILD_TESTS=OFF -DKVPOOL_BUILD_BENCH=OFF \
    -DKVPOOL_BUILD_PYTHON=OFF >/dev/null
fi
echo "=== kvpool fuzz: building ${targets[*]} in ${build} ==="
ninja -C "$build" -j"$jobs" "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/artifacts"
# One target: fuzzes it, then leaves its exit status in $build/fuzz_<target>.rc.
fuzz_one() {
  local t=$1 rc=0
  local work=$build/corpus/$t  # new inputs go here, not into the repository
  mkdir -p "$work"
  local dirs=("$work" "tests/fuzz/corpus/$t")
  [ -d "tests/fuzz/regressions/$t" ] && dirs+=("tests/fuzz/regressions/$t")
  "$build/tests/fuzz/fuzz_$t" "${dirs[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=4096 -max_len=16384 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t-" >"$build/fuzz_$t.log" 2>&1 || rc=$?
  echo "$rc" >"$build/fuzz_$t.rc"
}

# FUZZ_JOBS targets at a time: each fuzzer is one process on one core.
echo "=== kvpool fuzz: ${targets[*]} for ${seconds}s each, ${jobs} at a time ==="
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  rm -f "$build/fuzz_$t.rc"
  fuzz_one "$t" &
done
wait

failed=()
summary=()
for t in "${targets[@]}"; do
  log=$build/fuzz_$t.log
  rc=$(cat "$build/fuzz_$t.rc" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  summary+=("$(printf '%-16s rc=%-3s execs=%-10s %s' "$t" "$rc" "${execs:-?}" "${cov:-}")")
  if [ "$rc" != 0 ]; then
    failed+=("$t")
    echo "--- $t failed (rc=$rc); last lines of $log:"
    tail -40 "$log"
  fi
done

echo "=== kvpool fuzz summary (${seconds}s each) ==="
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FUZZ FAILURES: ${failed[*]} (inputs in $build/artifacts/)"
  exit 1
fi
echo "=== kvpool fuzz: all targets clean ==="
