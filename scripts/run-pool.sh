#!/usr/bin/env bash
# Runs a local kvpool pool and serves a realistic workload on it: installs dependencies, builds
# kvpool, then `kvpool bench` starts a master and storage nodes on 127.0.0.1 and drives a
# HiCache-shaped workload (multi-turn conversations sharing prompt prefixes) through them.
# Extra arguments go to `kvpool bench` (see `build/src/tools/kvpool bench --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The microbenchmarks are left out of a new build tree only: a developer's build/ that has them
# keeps them.
bench=()
[[ -f build/CMakeCache.txt ]] || bench=(-DKVPOOL_BUILD_BENCH=OFF)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${bench[@]}" \
  -DCMAKE_UNITY_BUILD=ON >/dev/null
ninja -C build -j"$(nproc)" kvpool kvpool-bench
exec build/src/tools/kvpool bench --workload hicache "$@"
