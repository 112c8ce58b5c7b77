#!/usr/bin/env bash
# Runs a local kvpool pool and serves a realistic workload on it: installs dependencies, builds
# kvpool, then `kvpool bench` starts a master and storage nodes on 127.0.0.1 and drives a
# HiCache-shaped workload (multi-turn conversations sharing prompt prefixes) through them.
# Extra arguments go to `kvpool bench` (see `build/src/tools/kvpool bench --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVPOOL_BUILD_BENCH=OFF \
  -DCMAKE_UNITY_BUILD=ON >/dev/null
ninja -C build -j"$(nproc)" kvpool kvpool-bench
exec build/src/tools/kvpool bench --workload hicache "$@"
