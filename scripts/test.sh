#!/usr/bin/env bash
# Runs every test: installs build dependencies (Debian packages), builds kvpool twice (optimized,
# and with AddressSanitizer + UndefinedBehaviorSanitizer) and runs the whole CTest suite on each.
# Usage: scripts/test.sh            (from anywhere; build trees go to ./build and ./build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

jobs=$(nproc)
run_suite() {  # NAME BUILD_DIR CMAKE_ARGS...
  local name=$1 dir=$2
  shift 2
  echo "=== kvpool tests: ${name} build (${dir}) ==="
  cmake -S . -B "${dir}" -G Ninja -DKVPOOL_BUILD_BENCH=OFF "$@" >/dev/null
  ninja -C "${dir}" -j"${jobs}"
  ctest --test-dir "${dir}" -j"${jobs}" --output-on-failure --timeout 600
}

run_suite optimized build -DCMAKE_BUILD_TYPE=RelWithDebInfo
# Sanitizer run: leaks and undefined behaviour fail the run.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_suite "ASan+UBSan" build-asan -DCMAKE_BUILD_TYPE=Debug -DKVPOOL_SANITIZE=ON
echo "=== kvpool tests: all suites passed ==="
