#!/usr/bin/env bash
# Runs every test: installs build dependencies (Debian packages), then
#   1. an optimized build (gcc, build/, warnings are errors): the whole CTest suite, then
#      clang-tidy (.clang-tidy) over the C++ files the change touches (build-tidy/), then the
#      Python tests (pytest with /usr/bin/python3; the status page's in headless Chromium, its
#      screenshot kept in build/artifacts/), with torch and again as on a machine without it,
#      then the fleet smoke
#      (scripts/fleet.py smoke: hosts in network namespaces, a partition and heal);
#   2. a sanitizer build (clang, build-sanitize/: AddressSanitizer + UndefinedBehaviorSanitizer,
#      with libFuzzer's coverage): the whole CTest suite again, then each fuzz target for
#      FUZZ_SECONDS (default 15) from its seed corpus (tests/fuzz/run.sh);
#   3. a ThreadSanitizer build (clang, build-tsan/) of the in-process tests of the concurrent
#      parts (CTest label "unit" of common, rpc, transfer, master, node, client).
# Both builds are unity builds with line-table debug info only: the suite is compiled from
# scratch on every CI run, and this halves that time on two cores (docs/testing.md).
# Usage: scripts/test.sh            (from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

jobs=$(nproc)
run_suite() {  # NAME BUILD_DIR CMAKE_ARGS...
  local name=$1 dir=$2
  shift 2
  echo "=== kvpool tests: ${name} build (${dir}) ==="
  # The microbenchmarks are left out of a new build tree only: a developer's tree that has them
  # (docs/benchmarks.md) keeps them.
  local bench=()
  [[ -f "${dir}/CMakeCache.txt" ]] || bench=(-DKVPOOL_BUILD_BENCH=OFF)
  cmake -S . -B "${dir}" -G Ninja "${bench[@]}" -DCMAKE_UNITY_BUILD=ON "$@" >/dev/null
  ninja -C "${dir}" -j"${jobs}"
  ctest --test-dir "${dir}" -j"${jobs}" --output-on-failure --timeout 600
}

run_suite optimized build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DKVPOOL_BUILD_PYTHON=ON -DKVPOOL_WERROR=ON

# clang-tidy over the .cc files under src/ and tests/ that differ from HEAD^ (KVPOOL_TIDY_BASE
# to choose another base; nothing without a parent, e.g. a shallow clone): any finding fails the
# run (docs/testing.md). Its own tree, configured only (nothing is compiled; the script makes the
# generated headers): clang as the compiler, as clang-tidy parses with clang (gcc's flags lack
# the coroutine switches the top-level CMakeLists gives clang), and no unity build, whose compile
# database names unity_*.cxx instead of our files. About 15 s a file (median; a few take minutes).
echo "=== kvpool tests: clang-tidy over the changed C++ files (build-tidy) ==="
CC=clang CXX=clang++ cmake -S . -B build-tidy -G Ninja -DKVPOOL_BUILD_BENCH=ON \
  -DKVPOOL_BUILD_PYTHON=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  >/dev/null
KVPOOL_TIDY_JOBS=${jobs} scripts/clang-tidy-changed.sh build-tidy

# Python: the module and package in build/python, real kvpool processes from build/src/tools.
run_pytest() {  # NAME [ENV=VALUE...]
  local name=$1
  shift
  echo "=== kvpool tests: Python, ${name} (pytest, optimized build) ==="
  local rc=0
  # Artifacts (the status page's screenshot, test_status_page.py) land in build/artifacts.
  env KVPOOL_ARTIFACTS_DIR="$PWD/build/artifacts" "$@" PYTHONPATH="$PWD/build/python" \
    KVPOOL_BINARY="$PWD/build/src/tools/kvpool" \
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

# The fleet smoke (docs/fleet.md): 3 hosts in network namespaces, 1 master, 2 nodes, one node
# partitioned and healed under reads, about 30 s. Skipped (one line) only where network
# namespaces are not permitted (exit 77 of `fleet.py check`); any failure, a wrong byte above
# all, fails the run.
echo "=== kvpool tests: fleet smoke (network namespaces, optimized build) ==="
fleet_rc=0
fleet_why=$(/usr/bin/python3 scripts/fleet.py check 2>&1) || fleet_rc=$?
if [ "$fleet_rc" -eq 77 ]; then
  echo "fleet smoke skipped: ${fleet_why#fleet: }"
elif [ "$fleet_rc" -ne 0 ]; then
  echo "$fleet_why" >&2
  exit "$fleet_rc"
else
  /usr/bin/python3 scripts/fleet.py smoke --build "$PWD/build"
fi

# Sanitizer run: leaks and undefined behaviour fail the run. The Python module is not built
# here; the optimized gcc tree's ASan copy of it (build/python-asan, preloading gcc's libasan)
# serves python/tests/test_buffer_handle_asan.py.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
CC=clang CXX=clang++ run_suite "ASan+UBSan (clang, with the fuzz targets)" build-sanitize \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DKVPOOL_SANITIZE=ON -DKVPOOL_FUZZ=ON \
  -DKVPOOL_BUILD_PYTHON=OFF
# The KV events again from the ASan+UBSan master and node (the Python side from build/python):
# a memory error or undefined behaviour aborts the master and fails the run (the processes are
# killed at the end, so leaks are left to the CTest suite above).
echo "=== kvpool tests: KV events from the ASan+UBSan master ==="
PYTHONPATH="$PWD/build/python" KVPOOL_BINARY="$PWD/build-sanitize/src/tools/kvpool" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider python/tests/test_kv_events.py
# Fuzzing, in the same tree: a crash, leak or timeout fails the run (tests/fuzz/run.sh).
FUZZ_SECONDS=${FUZZ_SECONDS:-15} FUZZ_JOBS=${jobs} FUZZ_BUILD_DIR=build-sanitize tests/fuzz/run.sh

# ThreadSanitizer: task pools, transfer plans, the RPC server and connection pools, the master's
# sharded tables, the segment host, the node's attach service. The integration tests pass under
# TSan too (how to run them: docs/testing.md); CI keeps to the in-process tests to stay well
# within its time.
echo "=== kvpool tests: ThreadSanitizer build (build-tsan), in-process tests ==="
tsan_targets=(common_test rpc_test transfer_test master_client_test master_test hosting_test node_test
  client_test)
CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja -DKVPOOL_BUILD_BENCH=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DKVPOOL_TSAN=ON \
  -DKVPOOL_BUILD_PYTHON=OFF >/dev/null
ninja -C build-tsan -j"${jobs}" "${tsan_targets[@]}"
# halt_on_error: a report fails its test. No ASLR: clang 14's TSan needs its fixed memory layout.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
  setarch "$(uname -m)" -R ctest --test-dir build-tsan -L unit -j"${jobs}" --output-on-failure \
  --timeout 600
echo "=== kvpool tests: all suites passed ==="
