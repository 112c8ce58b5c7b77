#!/usr/bin/env bash
# Runs every test: installs build dependencies (Debian packages), builds kvpool twice (optimized,
# and with AddressSanitizer + UndefinedBehaviorSanitizer) and runs the whole CTest suite on each,
# plus the Python tests (pytest with /usr/bin/python3) against the optimized build, then builds
# the libFuzzer targets with clang and fuzzes each for FUZZ_SECONDS (default 15).
# Usage: scripts/test.sh            (from anywhere; build trees go to ./build, ./build-asan and
#                                    ./build-fuzz)
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

run_suite optimized build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVPOOL_BUILD_PYTHON=ON

# Python: the module and package in build/python, real kvpool processes from build/src/tools.
run_pytest() {  # NAME [ENV=VALUE...]
  local name=$1
  shift
  echo "=== kvpool tests: Python, ${name} (pytest, optimized build) ==="
  local rc=0
  env "$@" PYTHONPATH="$PWD/build/python" KVPOOL_BINARY="$PWD/build/src/tools/kvpool" \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider python/tests || rc=$?
  if [ "$rc" -eq 5 ]; then  # pytest: no tests collected
    echo "pytest collected no tests: the Python suite is missing (python/tests)" >&2
    exit 1
  elif [ "$rc" -ne 0 ]; then
    exit "$rc"
  fi
}
run_pytest "torch tensors"
# Again as on a machine without torch: the SGLang backend must work with numpy arrays alone.
run_pytest "numpy only" KVPOOL_TEST_HIDE_TORCH=1

# Sanitizer run: leaks and undefined behaviour fail the run.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The Python module is not built here: an ASan extension cannot load into /usr/bin/python3.
run_suite "ASan+UBSan" build-asan -DCMAKE_BUILD_TYPE=Debug -DKVPOOL_SANITIZE=ON \
  -DKVPOOL_BUILD_PYTHON=OFF
# Fuzzing: every libFuzzer target from its seed corpus; a crash fails the run (tests/fuzz/run.sh).
FUZZ_SECONDS=${FUZZ_SECONDS:-15} FUZZ_JOBS=${jobs} tests/fuzz/run.sh
echo "=== kvpool tests: all suites passed ==="
